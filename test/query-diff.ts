/**
 * The differential tier of the query language: a seeded dataset of transactions and a seeded
 * generator of random valid queries (every comparison and junction, every scalar function, every
 * aggregate, group-by fields, v1 and v2 names, Unicode and quoting in strings, money literals
 * with many decimals), each answered by both compilers — PostgreSQL (api/engine/operations.ts,
 * the reference) and ClickHouse over the mirror (reporting/report.ts) — and, for some, recounted
 * from the rows the Postgres list renders, as an analyst reconciling a report with an export would.
 *
 * Read by test/reporting-agreement.test.ts (a few hundred queries in `npm test`) and by
 * bench/query-diff.ts (`npm run bench:query-diff`, many thousands). Seeded: a seed replays a run.
 */
import type { Knex } from 'knex';
import { createKnex } from '../api/db/admin.ts';
import { rows, type Db } from '../api/db/connection.ts';
import type { Collection, Tenant, Version } from '../api/engine/family.ts';
import { aggregate, list, type OperationContext } from '../api/engine/operations.ts';
import { ApiError } from '../api/errors.ts';
import { SCALAR_FUNCTIONS } from '../api/query/functions.ts';
import { AGGREGATE_FUNCTIONS } from '../api/query/aggregates.ts';
import { parseListQuery } from '../api/query/listQuery.ts';
import { MIRROR_COLUMNS } from '../reporting/columns.ts';
import { runReport } from '../reporting/report.ts';
import type { ReportingStore } from '../reporting/store.ts';

export type Params = Array<[string, string]>;
export interface RandomQuery {
  version: Version;
  params: Params;
}

export const TENANTS: Tenant[] = [
  { orgId: 'org_agree_a', environment: 'test' },
  { orgId: 'org_agree_a', environment: 'live' },
  { orgId: 'org_agree_b', environment: 'test' },
];
export const TYPES = ['payment', 'payout', 'refund', 'deposit', 'withdraw'];
export const STATUSES = ['processing', 'authorized', 'processed', 'voided', 'declined', 'rejected'];
// Texts whose case PostgreSQL and Unicode's full rules map apart (İ, ß, final Σ, ǅ), LIKE's own
// characters, both quotes, a backslash, digits with leading zeros and characters beyond the BMP.
const WORDS = ['abc', 'abd', 'order 7', 'x_y', '100%', 'refund', '42', 'ab\\c', 'İstanbul', 'ISTANBUL', 'istanbul', 'straße', 'STRASSE',
  'ΣΊΣΥΦΟΣ', 'ǅemal', 'naïve café', 'it\'s "quoted"', '00123', 'emoji 😀', 'ﬁle'];
const ORDER_NUMBERS = ['00123', '123', 'A-1', '007', 'ÉTÉ-9', 'ß-1'];
const ACCOUNTS = ['acct_aaa', 'acct_bbb', 'acct_ccc'];
const REGIONS = ['eu', 'us', 'apac', 'İzmir'];

/** xorshift32: small, fast, replayable. */
export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0 || 1;
  }

  next(): number {
    let s = this.#state;
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    this.#state = s;
    return s / 0x100000000;
  }

  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  chance(p: number): boolean {
    return this.next() < p;
  }
}

// ---------- data ----------

function randomAttrs(r: Random): Record<string, unknown> | undefined {
  if (r.chance(0.15)) return undefined;
  const attrs: Record<string, unknown> = {};
  if (r.chance(0.7)) attrs.region = r.pick(REGIONS);
  if (r.chance(0.4)) attrs.tier = r.pick(['gold', 'silver']);
  if (r.chance(0.3)) attrs.n = r.pick(['1', '2', '10', 7, 2.5]);
  if (r.chance(0.3)) attrs.code = r.pick(['007', '7', '0', 'x']);
  if (r.chance(0.1)) attrs.gone = null;
  if (r.chance(0.1)) attrs.nested = { x: 1 };
  if (r.chance(0.05)) attrs["it's"] = 'quoted';
  return attrs;
}

function randomData(r: Random): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  const maybe = (key: string, value: () => unknown, p = 0.9) => {
    if (r.chance(p)) data[key] = value();
  };
  maybe('amount', () => (r.chance(0.7) ? r.int(1, 100_000) : r.int(1, 2_000_000_000)), 0.95);
  maybe('currency', () => r.pick(['USD', 'CAD']));
  maybe('status', () => r.pick(STATUSES), 0.95);
  maybe('status_code', () => r.pick(['approved', 'card_expired', 'general_decline']), 0.7);
  maybe('description', () => r.pick(WORDS), 0.6);
  maybe('order_number', () => r.pick(ORDER_NUMBERS), 0.4);
  maybe('customer_id', () => r.pick(ACCOUNTS), 0.7);
  maybe('sender', () => ({ account_id: r.pick(ACCOUNTS) }), 0.5);
  maybe('payment_method_type', () => r.pick(['card', 'bank_account']));
  maybe('card_brand', () => r.pick(['visa', 'mastercard']), 0.6);
  maybe('funding_timing', () => r.pick(['standard', 'rapid', 'instant']), 0.5);
  maybe('funding_delay', () => r.int(0, 10), 0.5);
  maybe('fee', () => r.int(0, 5_000), 0.5);
  // Charged on a few; the rest are stored as 0 by the database, as every writer's rows are.
  maybe('conv_fee', () => r.int(1, 500), 0.2);
  const attrs = randomAttrs(r);
  if (attrs) data.attrs = attrs;
  return data;
}

function randomTime(r: Random): string {
  const start = Date.UTC(2023, 0, 1);
  const end = Date.UTC(2025, 11, 31);
  const ms = start + Math.floor(r.next() * (end - start));
  const micros = r.chance(0.1) ? 0 : r.int(0, 999_999);
  const base = r.chance(0.05) ? new Date(ms - (ms % 86_400_000)) : new Date(ms - (ms % 1000));
  return `${base.toISOString().slice(0, 19)}.${String(micros).padStart(6, '0')}Z`;
}

/** Writes random transactions straight into the table, as any writer of it would. */
export class Dataset {
  readonly r: Random;
  #nextId = 0;

  constructor(r: Random) {
    this.r = r;
  }

  async insert(db: Db, count: number): Promise<void> {
    const r = this.r;
    const items = Array.from({ length: count }, () => ({ id: `txn_agree${String(this.#nextId++).padStart(6, '0')}`, tenant: r.pick(TENANTS), type: r.pick(TYPES), data: randomData(r), at: randomTime(r) }));
    await rows(db,
      `insert into transactions (id, org_id, environment, type, data, created_at, modified_at)
       select id, org_id, environment, type, data, at, at from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::jsonb[], ?::timestamptz[])
         as r(id, org_id, environment, type, data, at)`,
      [items.map((i) => i.id), items.map((i) => i.tenant.orgId), items.map((i) => i.tenant.environment), items.map((i) => i.type),
        items.map((i) => JSON.stringify(i.data)), items.map((i) => i.at)]);
  }

  /** Updates a fifth, deletes a few and inserts more. */
  async change(db: Db): Promise<void> {
    const r = this.r;
    const ids = (await rows<{ id: string }>(db, 'select id from transactions order by id')).map((row) => row.id);
    const touched = ids.filter(() => r.chance(0.2));
    for (const id of touched) {
      await rows(db, `update transactions set data = data || ?::jsonb, modified_at = now() where id = ?`,
        [JSON.stringify({ status: r.pick(STATUSES), attrs: randomAttrs(r) ?? {}, ...(r.chance(0.3) ? { amount: r.int(1, 50_000) } : {}) }), id]);
    }
    const doomed = ids.filter((id) => !touched.includes(id) && r.chance(0.05));
    await rows(db, 'delete from transactions where id = any(?::text[])', [doomed]);
    await this.insert(db, 300);
  }
}

// ---------- queries ----------

interface Term {
  text: string;
  versions?: Version[];
}

function forVersion(terms: readonly Term[], version: Version): string[] {
  return terms.filter((term) => !term.versions || term.versions.includes(version)).map((term) => term.text);
}

/** Fields by what they hold, with the versions that name them. */
const TEXT_FIELDS: Term[] = [
  { text: 'type' }, { text: 'status', versions: ['v1'] }, { text: 'status.value', versions: ['v2'] }, { text: 'currency' }, { text: 'description' },
  { text: 'order_number' }, { text: 'card_brand' }, { text: 'payment_method_type' }, { text: 'customer_id', versions: ['v1'] },
  { text: 'sender.account_id', versions: ['v2'] }, { text: 'status_code', versions: ['v1'] }, { text: 'status.code', versions: ['v2'] },
  { text: 'funding_timing', versions: ['v2'] }, { text: 'attrs[region]' }, { text: 'attrs.code' }, { text: 'attrs.n' }, { text: 'attrs["it\'s"]' },
];
const MONEY_FIELDS: Term[] = [{ text: 'amount' }, { text: 'fee' }, { text: 'conv_fee' }];
const NUMBER_FIELDS: Term[] = [...MONEY_FIELDS, { text: 'funding_delay', versions: ['v2'] }];
const TIME_FIELDS: Term[] = [{ text: 'created_at' }, { text: 'modified_at' }];

/**
 * Every mirrored field but the times (a list shows them to the second, where groups are finer):
 * a row showing a value its store does not hold (a default filled in on the way out) shows up in
 * a recount by it.
 */
const RECOUNT_FIELDS: Term[] = MIRROR_COLUMNS.flatMap(({ field }) => {
  if (!field || field.type === 'datetime') return [];
  return (['v1', 'v2'] as const).flatMap((version) => (field[version] ? [{ text: field[version]!, versions: [version] }] : []));
});

const FUNCTIONS_BY_ARG = {
  any: Object.keys(SCALAR_FUNCTIONS).filter((fn) => SCALAR_FUNCTIONS[fn].args === 'any'),
  number: Object.keys(SCALAR_FUNCTIONS).filter((fn) => SCALAR_FUNCTIONS[fn].args === 'number'),
  time: Object.keys(SCALAR_FUNCTIONS).filter((fn) => SCALAR_FUNCTIONS[fn].args === 'time'),
};

/** Queries both paths must refuse: misuse of aggregates, unknown fields, type mismatches. */
const INVALID: Params[] = [
  [['fields', 'type,count']],
  [['fields', 'count'], ['q', 'sum(amount) > 1']],
  [['fields', 'count'], ['q', 'nope == 1']],
  [['fields', 'count'], ['q', 'amount > "abc"']],
  [['fields', 'sum(description)']],
  [['fields', 'year(amount),count'], ['group_by', 'year(amount)']],
  [['fields', 'count'], ['q', 'created_at > "tomorrow"']],
  [['fields', 'count'], ['q', 'created_at > description']],
  [['fields', 'count'], ['q', 'status < null']],
  [['fields', 'count'], ['amount', '>ten']],
  [['fields', 'max(count)']],
  [['fields', 'count'], ['q', 'lower(amount) == "1"']],
  [['fields', 'count'], ['q', 'amount == 1.2.3']],
];

/** A string literal in q, in either quote style, escaped as each takes it. */
function quoted(r: Random, text: string): string {
  if (r.chance(0.5) || /[\n\r\t]/.test(text)) return r.chance(0.2) ? jsonWithUnicodeEscapes(text) : JSON.stringify(text);
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function jsonWithUnicodeEscapes(text: string): string {
  return JSON.stringify(text).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A decimal amount as written by someone typing many decimals: half-way cents included. */
function moneyText(r: Random): string {
  const whole = r.pick([0, 1, 5, 12, 500, 1000, r.int(0, 100_000), r.int(0, 20_000_000)]);
  const decimals = r.int(0, 6);
  let fraction = Array.from({ length: decimals }, () => r.int(0, 9)).join('');
  if (decimals >= 3 && r.chance(0.4)) fraction = `${fraction.slice(0, 2)}5${fraction.slice(3)}`;
  const text = decimals ? `${whole}.${fraction}` : String(whole);
  return r.chance(0.1) ? `-${text}` : text;
}

export class QueryGenerator {
  readonly r: Random;

  constructor(r: Random) {
    this.r = r;
  }

  version(): Version {
    return this.r.chance(0.5) ? 'v1' : 'v2';
  }

  field(terms: readonly Term[], version: Version): string {
    return this.r.pick(forVersion(terms, version));
  }

  /** A value-yielding operand: a field or a function of one, nested at times; with the kind it yields. */
  operand(version: Version, depth = 0): { text: string; kind: 'text' | 'number' | 'money' | 'time' | 'date' } {
    const r = this.r;
    const roll = r.next();
    if (roll < 0.3) return { text: this.field(TEXT_FIELDS, version), kind: 'text' };
    if (roll < 0.45) {
      const field = this.field(NUMBER_FIELDS, version);
      return { text: field, kind: forVersion(MONEY_FIELDS, version).includes(field) ? 'money' : 'number' };
    }
    if (roll < 0.55) return { text: this.field(TIME_FIELDS, version), kind: 'time' };
    if (depth >= 2) return { text: this.field(TEXT_FIELDS, version), kind: 'text' };
    // Text functions a third of the time: they are few, and where case rules differ.
    const fn = r.chance(0.35) ? r.pick(FUNCTIONS_BY_ARG.any) : r.pick([...FUNCTIONS_BY_ARG.number, ...FUNCTIONS_BY_ARG.time]);
    const spec = SCALAR_FUNCTIONS[fn];
    const arg = spec.args === 'time' ? this.timeOperand(version, depth) : spec.args === 'number' ? this.numberOperand(version, depth) : this.textOperand(version, depth);
    const kind = spec.type === 'text' ? 'text' : spec.type === 'date' ? 'date' : fn === 'abs' && arg.kind === 'money' ? 'money' : 'number';
    return { text: `${r.chance(0.1) ? fn.toUpperCase() : fn}(${arg.text})`, kind };
  }

  textOperand(version: Version, depth: number): { text: string; kind: 'text' | 'number' | 'time' | 'date' } {
    if (depth < 1 && this.r.chance(0.3)) {
      const inner = this.operand(version, depth + 1);
      if (inner.kind !== 'money') return { text: inner.text, kind: inner.kind };
    }
    return { text: this.field(TEXT_FIELDS, version), kind: 'text' };
  }

  numberOperand(version: Version, depth: number): { text: string; kind: 'number' | 'money' } {
    if (depth < 1 && this.r.chance(0.2)) return { text: this.r.pick(['length(description)', 'year(created_at)', 'month(modified_at)', 'length(order_number)']), kind: 'number' };
    const field = this.field(NUMBER_FIELDS, version);
    return { text: field, kind: forVersion(MONEY_FIELDS, version).includes(field) ? 'money' : 'number' };
  }

  timeOperand(version: Version, depth: number): { text: string; kind: 'time' | 'date' } {
    if (depth < 1 && this.r.chance(0.2)) return { text: `${this.r.pick(['date', 'last_day'])}(${this.field(TIME_FIELDS, version)})`, kind: 'date' };
    return { text: this.field(TIME_FIELDS, version), kind: 'time' };
  }

  /** A literal of the kind an operand compares with. */
  literal(kind: string, operandText: string, version: Version): string {
    const r = this.r;
    switch (kind) {
      case 'money': return r.chance(0.2) ? JSON.stringify(moneyText(r)) : moneyText(r);
      case 'number': return String(r.pick([0, 1, 2, 3, 5, 7, 10, 12, 31, 53, 2024, 1700000000, r.int(0, 100), 2.5]));
      case 'time': case 'date': return r.pick(['date(2024-03-01)', '"2024-06-15 12:00:00"', 'date(2023-12-31 23:59:59)', '"2024-01-01T00:00:00Z"', '"6/1/2024"', 'date("2025-02-28")']);
      default: return quoted(r, this.textValue(operandText, version));
    }
  }

  textValue(operandText: string, version: Version): string {
    const r = this.r;
    if (/^(status|status\.value)$/.test(operandText)) return r.pick(STATUSES);
    if (operandText === 'type') return version === 'v1' ? r.pick(['payment', 'credit', 'reversal', 'refund']) : r.pick(TYPES);
    if (operandText === 'currency') return r.pick(['USD', 'CAD', 'usd']);
    if (operandText.startsWith('attrs')) return r.pick([...REGIONS, '007', '7', 'quoted', 'eu']);
    if (operandText === 'order_number') return r.pick(ORDER_NUMBERS);
    const word = r.pick([...WORDS, ...ORDER_NUMBERS]);
    if (/^lower\(/i.test(operandText)) return word.toLowerCase();
    if (/^upper\(/i.test(operandText)) return r.pick([word.toUpperCase(), 'STRAßE', 'İSTANBUL']);
    return word;
  }

  pattern(): string {
    const r = this.r;
    const core = r.pick(['a', 'İ', 'i', 'ß', 'SS', 'σ', 'Σ', '_', '%', '\\', '"', "'", '0', 'ǆ', 'café', '😀', 'STAN']);
    return r.pick([`*${core}*`, `${core}*`, `*${core}`, core, `*${core}*${r.pick(['a', 'n', 'e'])}*`]);
  }

  condition(version: Version, depth = 0): string {
    const r = this.r;
    const roll = r.next();
    if (depth < 2 && roll < 0.15) return `(${this.condition(version, depth + 1)} ${r.pick(['&&', '||'])} ${this.condition(version, depth + 1)})`;
    if (depth < 2 && roll < 0.2) return `!(${this.condition(version, depth + 1)})`;
    if (roll < 0.22) return r.pick(['true', 'false', '!true']);
    const left = this.operand(version);
    const form = r.next();
    if (form < 0.1) return `${left.text} ${r.pick(['==', '!='])} null`;
    if (form < 0.25 && left.kind === 'text') return `${left.text} ? ${quoted(r, this.pattern())}`;
    if (form < 0.3) {
      // Two operands of one kind compared with each other.
      const other = left.kind === 'money' || left.kind === 'number' ? this.field(NUMBER_FIELDS, version) : left.kind === 'text' ? this.field(TEXT_FIELDS, version) : this.field(TIME_FIELDS, version);
      return `${left.text} ${r.pick(['==', '!=', '<', '>=']) } ${other}`;
    }
    const op = r.pick(['==', '!=', '>', '>=', '<', '<=']);
    const value = this.literal(left.kind, left.text, version);
    // A literal on the left is read as the flipped comparison.
    return r.chance(0.1) ? `${value} ${op} ${left.text}` : `${left.text} ${op} ${value}`;
  }

  filterParam(version: Version): [string, string] {
    const r = this.r;
    return r.pick<() => [string, string]>([
      () => ['amount', r.pick(['>1000', '<500|>100000', `>=${moneyText(r)}`, `!${moneyText(r)}`, moneyText(r)])],
      () => ['conv_fee', r.pick(['0', '!0', '>1', 'null'])],
      () => [version === 'v1' ? 'status' : 'status[value]', r.pick(['processed', 'processed|voided', '!declined'])],
      () => ['attrs[region]', r.pick(['eu', 'us|apac', '!eu', 'null', 'İzmir'])],
      () => ['created_at', r.pick(['>2024-01-01', '<=2024-06-30 12:00:00', '>=3/1/2025'])],
      () => ['month(created_at)', String(r.int(1, 12))],
      () => ['type', version === 'v1' ? r.pick(['credit', 'payment|refund']) : r.pick(['payout', 'deposit'])],
      () => ['description', r.pick(['?*a*', '?abc', 'abc', '?*İ*', '?*ß*', 'straße', '?*SS*'])],
      () => ['order_number', r.pick(['00123', '?00*', '123'])],
    ])();
  }

  groupTerm(version: Version): string {
    const r = this.r;
    if (r.chance(0.4)) return this.field(r.pick([TEXT_FIELDS, NUMBER_FIELDS]), version);
    if (r.chance(0.05)) return this.field(TIME_FIELDS, version);
    const operand = this.operand(version, 1);
    return operand.kind === 'time' ? `date(${operand.text})` : operand.text;
  }

  aggregateTerm(version: Version): string {
    const r = this.r;
    const fn = r.pick(Object.keys(AGGREGATE_FUNCTIONS));
    if (fn === 'count' && r.chance(0.4)) return 'count';
    const spec = AGGREGATE_FUNCTIONS[fn];
    if (spec.numeric) {
      const arg = r.chance(0.7) ? this.field(NUMBER_FIELDS, version) : r.pick(['abs(amount)', 'round(amount)', 'hour(created_at)', 'length(description)', 'floor(fee)']);
      return `${fn}(${arg})`;
    }
    const arg = r.pick([() => this.field(TEXT_FIELDS, version), () => this.field(NUMBER_FIELDS, version), () => this.field(TIME_FIELDS, version), () => this.groupTerm(version)])();
    return `${fn}(${arg})`;
  }

  query(): RandomQuery {
    const r = this.r;
    const version = this.version();
    if (r.chance(0.05)) return { version, params: r.pick(INVALID) };
    const groups = [...new Set(Array.from({ length: r.int(0, 2) }, () => this.groupTerm(version)))];
    const aggregates = [...new Set(Array.from({ length: r.int(groups.length ? 0 : 1, 4) }, () => this.aggregateTerm(version)))];
    const params: Params = [];
    const shown = groups.filter(() => r.chance(0.85));
    if (shown.length + aggregates.length) params.push(['fields', [...shown, ...aggregates].join(',')]);
    for (const group of groups) params.push(['group_by[]', group]);
    if (r.chance(0.6)) params.push(['q', this.condition(version)]);
    if (r.chance(0.3)) params.push(this.filterParam(version));
    if (groups.length && r.chance(0.3)) params.push(['order_by', `${r.pick(['asc', 'desc'])}(${r.pick(groups)})`]);
    // A limit keeps the first groups in order: the same groups on both paths.
    if (groups.length && r.chance(0.15)) params.push(['limit', String(r.int(1, 5))], ...(r.chance(0.5) ? [['offset', String(r.int(0, 3))] as [string, string]] : []));
    return { version, params };
  }

  /** A filter and one plain field to count rows by: what the list shows against what the report counts. */
  recount(): { version: Version; filters: Params; field: string } {
    const r = this.r;
    const version = this.version();
    const filters: Params = [];
    if (r.chance(0.7)) filters.push(['q', this.condition(version)]);
    if (r.chance(0.3)) filters.push(this.filterParam(version));
    return { version, filters, field: this.field(r.chance(0.5) ? RECOUNT_FIELDS : r.pick([TEXT_FIELDS, NUMBER_FIELDS]), version) };
  }
}

// ---------- the answers ----------

export type Outcome = { ok: true; values: Array<Record<string, unknown>> } | { ok: false; status: number; message: string };

/**
 * The Postgres path as the API runs it, with one change: bindings inlined into the SQL text.
 * Its GROUP BY binds a jsonb path once in SELECT and again in GROUP BY ($1 vs $5), which Postgres
 * refuses for every field stored in `data` (reported: query-http.test.ts GROUP_BY_DATA_BUG);
 * inlined, the two expressions are the same text and the compiled SQL is otherwise untouched.
 */
const formatter = createKnex('postgres://127.0.0.1/unused'); // formats only: never connects
export function inliningDb(db: Db): Db {
  return { raw: (sql: string, bindings: readonly unknown[]) => db.raw(formatter.raw(sql, bindings as Knex.RawBinding[]).toQuery()) } as unknown as Db;
}

export async function outcome(run: () => Promise<Array<Record<string, unknown>>>): Promise<Outcome> {
  try {
    return { ok: true, values: await run() };
  } catch (error) {
    if (error instanceof ApiError) return { ok: false, status: error.status, message: error.message };
    return { ok: false, status: 500, message: (error as Error).message };
  }
}

/** Equal values; floats (averages, deviations) within a relative 1e-9. Types must match: "7" is not 7. */
function close(x: unknown, y: unknown): boolean {
  if (typeof x === 'number' && typeof y === 'number') return x === y || Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(x), Math.abs(y));
  return x === y;
}

function sortKey(row: Record<string, unknown>): string {
  // Rounded, so float noise in averages does not reorder otherwise equal rows.
  return JSON.stringify(Object.entries(row).map(([k, v]) => [k, typeof v === 'number' ? Number(v.toPrecision(9)) : v]));
}

export function sameRows(a: Array<Record<string, unknown>>, b: Array<Record<string, unknown>>): boolean {
  if (a.length !== b.length) return false;
  const left = [...a].sort((x, y) => sortKey(x).localeCompare(sortKey(y)));
  const right = [...b].sort((x, y) => sortKey(x).localeCompare(sortKey(y)));
  return left.every((row, i) => {
    const other = right[i];
    const keys = Object.keys(row);
    return keys.length === Object.keys(other).length && keys.every((k) => close(row[k], other[k]));
  });
}

export type Verdict = 'agreed' | 'bothRefused' | 'pgFailedChRefused' | 'disagreed';

export interface Comparison {
  verdict: Verdict;
  /** what a person replaying it needs: the request and both answers */
  detail?: Record<string, unknown>;
}

export interface Paths {
  /** the database the Postgres path reads (through `inliningDb`) */
  pg: Db;
  store: ReportingStore;
  collection: Collection;
}

function contextFor(paths: Paths, tenant: Tenant, version: Version): OperationContext {
  return { tx: paths.pg, tenant, version, collection: paths.collection } as unknown as OperationContext;
}

/** One query on both paths. A query Postgres cannot run (500) must be a clean 400 on ClickHouse. */
export async function compareQuery(paths: Paths, tenant: Tenant, { version, params }: RandomQuery): Promise<Comparison> {
  const request = `${version} ${new URLSearchParams(params)}`;
  let query;
  try {
    query = parseListQuery(params);
  } catch (error) {
    return { verdict: 'bothRefused', detail: { request, refused: (error as Error).message } };
  }
  const pg = await outcome(async () => (await aggregate(contextFor(paths, tenant, version), query)).values as Array<Record<string, unknown>>);
  const ch = await outcome(() => runReport(paths.store, { tenant, version, query }));
  if (pg.ok && ch.ok) {
    if (sameRows(pg.values, ch.values)) return { verdict: 'agreed' };
    return { verdict: 'disagreed', detail: { request, postgres: pg.values.slice(0, 20), clickhouse: ch.values.slice(0, 20) } };
  }
  if (!pg.ok && pg.status === 500) {
    if (ch.ok || ch.status !== 400) return { verdict: 'disagreed', detail: { request, problem: `Postgres failed (${pg.message}); ClickHouse must refuse with 400`, clickhouse: ch } };
    return { verdict: 'pgFailedChRefused' };
  }
  if (pg.ok !== ch.ok || (!pg.ok && !ch.ok && pg.status !== ch.status)) {
    return { verdict: 'disagreed', detail: { request, problem: 'one answered, the other refused', postgres: pg.ok ? pg.values.slice(0, 5) : pg, clickhouse: ch.ok ? ch.values.slice(0, 5) : ch } };
  }
  return { verdict: 'bothRefused' };
}

function valueAt(object: unknown, path: string[]): unknown {
  let value = object;
  for (const key of path) value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
  return value ?? null;
}

/** `attrs[region]`, `attrs["it's"]`, `status.value` → the path in a rendered row. */
function renderedPath(field: string): string[] {
  return field.split(/[.[\]]/).filter(Boolean).map((segment) => segment.replace(/^["'](.*)["']$/, '$1').replace(/\\'/g, "'"));
}

/**
 * The rows the Postgres list shows for a filter, counted and summed by one field, against the
 * report of the same filter grouped by that field.
 */
export async function compareRecount(paths: Paths, tenant: Tenant, { version, filters, field }: { version: Version; filters: Params; field: string }): Promise<Comparison> {
  const request = `${version} ${new URLSearchParams([...filters, ['group_by', field]])}`;
  let listed: Outcome;
  try {
    // Non-default fields (`trigger`, `conv_fee`) are shown when named.
    const named = field.startsWith('attrs') ? '' : `,${field}`;
    const listQuery = parseListQuery([...filters, ['fields', `*,conv_fee,fee${named}`], ['limit', '10000']]);
    listed = await outcome(async () => (await list(contextFor(paths, tenant, version), listQuery)).values as Array<Record<string, unknown>>);
  } catch (error) {
    listed = { ok: false, status: (error as ApiError).status ?? 500, message: (error as Error).message };
  }
  let report: Outcome;
  try {
    const reportQuery = parseListQuery([...filters, ['fields', `${field},count,sum(amount)`], ['group_by', field], ['limit', '10000']]);
    report = await outcome(() => runReport(paths.store, { tenant, version, query: reportQuery }));
  } catch (error) {
    report = { ok: false, status: (error as ApiError).status ?? 500, message: (error as Error).message };
  }
  if (!listed.ok || !report.ok) {
    if (!listed.ok && !report.ok && (listed.status === report.status || listed.status === 500)) return { verdict: 'bothRefused' };
    return { verdict: 'disagreed', detail: { request, problem: 'one answered, the other refused', list: listed, report } };
  }
  const groups = new Map<string, { value: unknown; count: number; cents: number | null }>();
  const path = renderedPath(field);
  for (const row of listed.values) {
    // A custom attribute is text to the query language, whatever JSON value it holds.
    const shown = valueAt(row, path);
    const value = path[0] === 'attrs' && shown !== null && typeof shown !== 'string' ? (typeof shown === 'object' ? JSON.stringify(shown) : String(shown)) : shown;
    const key = JSON.stringify(value);
    const group = groups.get(key) ?? { value, count: 0, cents: null };
    group.count += 1;
    if (typeof row.amount === 'number') group.cents = (group.cents ?? 0) + Math.round(row.amount * 100);
    groups.set(key, group);
  }
  const fromList = [...groups.values()].map((g) => ({ [field]: g.value, count: g.count, 'sum(amount)': g.cents === null ? null : g.cents / 100 }));
  if (sameRows(fromList, report.values)) return { verdict: 'agreed' };
  return { verdict: 'disagreed', detail: { request, problem: 'the list shows other rows than the report counts', list: fromList.slice(0, 20), report: report.values.slice(0, 20) } };
}
