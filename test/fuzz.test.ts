/**
 * A seeded, deterministic fuzzer over the HTTP API. It throws random requests at the account
 * collections: random JSON (deep, wrongly typed, huge, unicode, prototype-pollution keys), form
 * and multipart bodies with odd brackets, random filters / fields / order_by / group_by / limit,
 * and random `q` strings built from the q language's tokens plus garbage.
 *
 * Invariants: never a 5xx; every 4xx is a contract error object; a rejected write changes no
 * stored row or event; nothing pollutes Object.prototype (the server runs in this process).
 *
 * A property tier (fast-check) follows: the `q` parser and the list parameters called directly, and
 * bodies (JSON, form with brackets, multipart), headers and ids in paths over HTTP, each for its
 * share of FUZZ_SECONDS; a failure is shrunk to a small counterexample.
 *
 * Re-run a failing seed with FUZZ_SEED=<seed> npm test -- test/fuzz.test.ts; run for minutes with
 * `npm run bench:fuzz` (FUZZ_SECONDS=600 by default).
 */
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { ApiError } from '../api/errors.ts';
import { parseListQuery } from '../api/query/listQuery.ts';
import { parseQ } from '../api/query/q.ts';
import type { Expr, Operand } from '../api/query/ast.ts';
import { startTestApi, type ApiResponse } from './helpers/api.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 0x5e771e);
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 600);

// ---------- a small PRNG (mulberry32) ----------

class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** uniform in [0, 1) */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let z = this.state;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) / 4294967296;
  }

  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  /** picks by weight: [[weight, value], …] */
  weighted<T>(items: ReadonlyArray<readonly [number, T]>): T {
    const total = items.reduce((sum, [w]) => sum + w, 0);
    let roll = this.next() * total;
    for (const [w, value] of items) {
      roll -= w;
      if (roll < 0) return value;
    }
    return items[items.length - 1][1];
  }
}

const rnd = new Random(SEED);

// ---------- vocabulary ----------

const COLLECTIONS = ['customers', 'processing_accounts', 'accounts'];
const ODD_COLLECTIONS = ['nope', 'Customers', 'customers.json', 'transactions_x', '%2e%2e', 'customers%00', '__proto__', 'constructor'];

const FIELD_PATHS = [
  'id', 'type', 'name', 'email', 'phone', 'address.city', 'address.postal_code', 'address.country_code', 'attrs.tier', 'attrs.region',
  'created_at', 'modified_at', 'status', 'funding_style', 'funding_delay', 'descriptor', 'legal_entity', 'primary_processing_id',
  'default_payment_method', 'contact_details.email', 'contact_details.phone', 'processing.status.funding',
  'processing.settings.funding.style', 'processing.settings.funding.delay', 'entity', 'nope', 'address.nope', 'object', 'attrs',
];
const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString', 'valueOf', '__defineGetter__'];
const FUNCTIONS = ['lower', 'upper', 'length', 'abs', 'ceil', 'floor', 'round', 'year', 'month', 'monthname', 'day', 'dayname',
  'dayofweek', 'dayofyear', 'weekofyear', 'last_day', 'hour', 'minute', 'second', 'unix_timestamp', 'date', 'nosuchfn'];
const AGGREGATES = ['sum', 'avg', 'count', 'min', 'max', 'stddev', 'variance'];

const WEIRD_STRINGS = [
  '', ' ', 'Ann', 'ann@example.com', 'not-an-email', '0', '-1', '1.5', '1e3', 'NaN', 'Infinity', 'true', 'null', 'undefined',
  '2024-01-31', '2024-01-31 10:20:30', '2024-02-30', '1/31/2024 10:00:00 AM', '99999-01-01', '0000-00-00', '9999-12-31T23:59:59Z',
  "' or 1=1 --", '"; drop table accounts; --', '%', '_', '*', '\\', '|', '||', '&&', '[', ']', '[]', '{}', '()', '%00', '%zz',
  '\u0000', '\ud800', '\u202e', 'Ω≈ç√', '🙂🙃', 'e\u0301', '\t\n\r', 'netted', 'net', 'gross', 'pending', 'active', 'customer', 'processing',
  'acct_', 'acct_0000000000000000000000', 'USD',
];

function randomText(maxLength = 40): string {
  const alphabets = ['abcxyzABCXYZ', '0123456789', ' ._-@', '!"#$%&\'()*+,/:;<=>?[\\]^`{|}~', 'éßøΩ漢字🙂\u0301\u200b\u202e'];
  const chars = [...rnd.pick(alphabets), ...rnd.pick(alphabets)];
  return Array.from({ length: rnd.int(0, maxLength) }, () => rnd.pick(chars)).join('');
}

function randomString(): string {
  return rnd.weighted<() => string>([
    [5, () => rnd.pick(WEIRD_STRINGS)],
    [4, () => randomText()],
    [1, () => rnd.pick(['x', 'é', '🙂', 'ab']).repeat(rnd.pick([257, 1025, 9000, 70_000, 300_000]))],
  ])();
}

function randomNumber(): number {
  return rnd.pick([0, -0, 1, -1, 2, 3, 10, 11, 0.5, 10.505, 1e12, 1e13, -1e21, 1e308, Number.MAX_SAFE_INTEGER, 2 ** 63, 5e-324, 123456.78]);
}

function randomKey(): string {
  return rnd.weighted<() => string>([
    [5, () => rnd.pick(FIELD_PATHS).split('.').pop()!],
    [2, () => rnd.pick(PROTO_KEYS)],
    [2, () => randomText(12)],
    [1, () => rnd.pick(['values', 'object', 'id', '', ' ', 'a.b', 'a[b]', '0', '-1'])],
  ])();
}

/** Sets a property as an own, enumerable one, `__proto__` included (a plain assignment would set the prototype). */
function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function randomValue(depth: number): unknown {
  const leaf = depth <= 0;
  return rnd.weighted<() => unknown>([
    [3, () => randomString()],
    [2, () => randomNumber()],
    [1, () => rnd.chance(0.5)],
    [1, () => null],
    [leaf ? 0 : 2, () => randomObject(depth - 1)],
    [leaf ? 0 : 1, () => Array.from({ length: rnd.int(0, 4) }, () => randomValue(depth - 1))],
  ])();
}

function randomObject(depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = rnd.int(0, 5); i > 0; i--) define(out, randomKey(), randomValue(depth));
  return out;
}

function deepNest(levels: number, inner: unknown): unknown {
  let value = inner;
  for (let i = 0; i < levels; i++) value = rnd.chance(0.5) ? [value] : { a: value };
  return value;
}

/** A plausible account body with some fields made wrong. */
function accountBody(): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (rnd.chance(0.8)) body.name = rnd.chance(0.6) ? `Fuzz ${rnd.int(0, 999)}` : randomValue(1);
  if (rnd.chance(0.4)) body.email = rnd.chance(0.5) ? `f${rnd.int(0, 99)}@example.com` : randomValue(1);
  if (rnd.chance(0.3)) body.phone = randomValue(1);
  if (rnd.chance(0.3)) body.address = rnd.weighted<() => unknown>([[3, () => ({ city: randomValue(0), postal_code: randomValue(0) })], [1, () => []], [1, () => 'Austin'], [1, () => randomObject(2)]])();
  if (rnd.chance(0.3)) body.attrs = rnd.weighted<() => unknown>([[3, () => randomObject(2)], [1, () => []], [1, () => deepNest(rnd.pick([10, 500, 1500]), 1)], [1, () => ({ big: 'x'.repeat(9000) })]])();
  if (rnd.chance(0.2)) body.type = rnd.pick(['customer', 'processing', 'bogus', 1, null, []]);
  if (rnd.chance(0.15)) body.contact_details = rnd.chance(0.5) ? { email: randomValue(0) } : randomValue(1);
  if (rnd.chance(0.15)) body.processing = rnd.chance(0.5) ? { settings: { funding: { delay: randomValue(0), style: randomValue(0) } } } : randomValue(2);
  if (rnd.chance(0.1)) body.funding_delay = randomValue(0);
  if (rnd.chance(0.1)) body.status = randomValue(0);
  if (rnd.chance(0.1)) body.primary_processing_id = rnd.chance(0.5) ? rnd.pick(ids.all) : randomValue(0);
  if (rnd.chance(0.1)) body.legal_entity = randomValue(2);
  if (rnd.chance(0.1)) body.created_at = randomValue(0);
  if (rnd.chance(0.1)) body.id = rnd.pick(ids.all);
  if (rnd.chance(0.15)) define(body, '__proto__', { polluted: 'json' });
  if (rnd.chance(0.1)) define(body, 'constructor', { prototype: { polluted: 'json' } });
  if (rnd.chance(0.1)) body.address = Object.defineProperty({}, '__proto__', { value: { polluted: 'nested' }, enumerable: true });
  return body;
}

function jsonBody(): unknown {
  return rnd.weighted<() => unknown>([
    [8, () => accountBody()],
    [2, () => ({ object: 'list', values: Array.from({ length: rnd.int(0, 4) }, () => (rnd.chance(0.8) ? accountBody() : randomValue(1))) })],
    [1, () => ({ object: 'list', values: randomValue(1) })],
    [1, () => ({ object: 'list', values: Array.from({ length: rnd.pick([1001, 1500]) }, () => ({ name: 'bulk' })) })],
    [2, () => randomObject(3)],
    [1, () => randomValue(2)],
    [1, () => deepNest(rnd.pick([50, 3000]), { name: 'deep' })],
  ])();
}

function formKey(): string {
  const base = rnd.pick(['name', 'email', 'address', 'attrs', 'values', 'processing', 'contact_details', 'type', 'object', ...PROTO_KEYS, randomText(6)]);
  return rnd.weighted<() => string>([
    [3, () => base],
    [3, () => `${base}[${rnd.pick(['city', 'tier', '0', '', 'settings', '__proto__', 'polluted', randomText(4)])}]`],
    [2, () => `${base}${Array.from({ length: rnd.int(2, 20) }, () => `[${rnd.pick(['a', '0', '', 'name', 'funding', 'prototype'])}]`).join('')}`],
    [2, () => `${base}${rnd.pick(['[', ']', '[[', ']]', '][', '[a', 'a]', '[]]', '[[0]]', '.city', '[city', '[999999999]', '[-1]'])}`],
    [1, () => rnd.pick(['values[0][name]', 'values[1][name]', 'values[0][address][city]', 'object', 'constructor[prototype][polluted]', '__proto__[polluted]'])],
  ])();
}

function formBody(): string {
  const pairs: string[] = [];
  if (rnd.chance(0.3)) pairs.push('object=list');
  for (let i = rnd.int(0, 6); i > 0; i--) {
    const raw = rnd.chance(0.15);
    const key = formKey();
    const value = rnd.chance(0.8) ? randomString().slice(0, 2000) : 'form';
    pairs.push(raw ? `${key}=${value}` : `${enc(key)}=${enc(value)}`);
  }
  if (rnd.chance(0.1)) pairs.push(rnd.pick(['&&&', '=', '==x', '%', '%E0%A4%A', 'a=%zz', '+']));
  return pairs.join('&');
}

function multipartBody(): FormData {
  const data = new FormData();
  for (let i = rnd.int(0, 5); i > 0; i--) data.append(formKey(), randomString().slice(0, 2000));
  if (rnd.chance(0.2)) data.append('file', new Blob(['binary\u0000data']), 'x.bin');
  return data;
}

// ---------- q and list parameters ----------

const Q_FIELDS = ['name', 'email', 'type', 'id', 'created_at', 'modified_at', 'attrs.tier', 'attrs[tier]', "attrs['my region']", 'address.city',
  'address[city]', 'contact_details.email', 'contact_details[email]', 'processing.settings.funding.delay', 'status', 'funding_delay', 'nope', 'a.b.c'];

function qLiteral(): string {
  return rnd.pick([
    () => JSON.stringify(randomString().slice(0, 30)),
    () => `'${randomText(10).replace(/['\\]/g, '')}'`,
    () => String(rnd.pick([0, 1, -1, 3, 12.5, 1e3, 99999999999])),
    () => rnd.pick(['true', 'false', 'null']),
    () => `date(${rnd.pick(['2024-01-31', '2024-01-31 10:00:00', '1/31/2024', '2024-13-45', 'garbage', '"2024-01-31"', ''])})`,
  ])();
}

function qOperand(depth: number): string {
  return rnd.weighted<() => string>([
    [5, () => rnd.pick(Q_FIELDS)],
    [3, () => qLiteral()],
    [depth > 0 ? 1 : 0, () => `${rnd.pick(FUNCTIONS)}(${qOperand(depth - 1)})`],
  ])();
}

function qExpr(depth: number): string {
  return rnd.weighted<() => string>([
    [5, () => `${qOperand(1)} ${rnd.pick(['==', '!=', '>=', '<=', '>', '<', '?'])} ${qOperand(1)}`],
    [1, () => qOperand(1)],
    [depth > 0 ? 2 : 0, () => `${qExpr(depth - 1)} ${rnd.pick(['&&', '||'])} ${qExpr(depth - 1)}`],
    [depth > 0 ? 1 : 0, () => `(${qExpr(depth - 1)})`],
    [depth > 0 ? 1 : 0, () => `!(${qExpr(depth - 1)})`],
  ])();
}

const Q_TOKENS = ['==', '!=', '>=', '<=', '>', '<', '?', '&&', '||', '!', '(', ')', ',', '.', '[', ']', '"', "'", 'date(', 'null', 'true',
  '12', '-3.5', '"x"', "'y'", ...Q_FIELDS, ...FUNCTIONS.map((f) => `${f}(`), '#', '@', '\\', '$1', ';', '--', '/*', '\u0000', '🙂', '=', '&', '|'];

function randomQ(): string {
  return rnd.weighted<() => string>([
    [5, () => qExpr(rnd.int(0, 3))],
    [3, () => Array.from({ length: rnd.int(1, 12) }, () => rnd.pick(Q_TOKENS)).join(rnd.pick([' ', ''])) ],
    [1, () => `${'('.repeat(rnd.pick([10, 70, 200]))}name == 1${')'.repeat(rnd.pick([10, 70, 200]))}`],
    [1, () => `name == "${'x'.repeat(rnd.pick([100, 5000]))}"`],
    [1, () => randomText(60)],
  ])();
}

function selectTerm(): string {
  return rnd.weighted<() => string>([
    [5, () => rnd.pick(FIELD_PATHS)],
    [1, () => '*'],
    [1, () => 'count'],
    [1, () => `${rnd.pick(AGGREGATES)}(${rnd.pick(FIELD_PATHS)})`],
    [1, () => `${rnd.pick(FUNCTIONS)}(${rnd.pick(FIELD_PATHS)})`],
    [1, () => randomText(8)],
  ])();
}

function listParam(name: string, term: () => string): Array<[string, string]> {
  const terms = Array.from({ length: rnd.int(1, 3) }, term);
  return rnd.weighted<() => Array<[string, string]>>([
    [2, () => [[name, terms.join(',')]]],
    [1, () => terms.map((v): [string, string] => [`${name}[]`, v])],
    [1, () => terms.map((v, i): [string, string] => [`${name}[${rnd.chance(0.9) ? i : randomText(3)}]`, v])],
  ])();
}

function filterParam(): [string, string] {
  const key = rnd.weighted<() => string>([
    [6, () => { const path = rnd.pick(FIELD_PATHS).split('.'); return path[0] + path.slice(1).map((p) => `[${p}]`).join(''); }],
    [1, () => `${rnd.pick(FUNCTIONS)}(${rnd.pick(FIELD_PATHS)})`],
    [1, () => rnd.pick(['attrs[tier]', 'attrs[a][b]', 'attrs[]', 'address[', 'q[0]', 'limit[]', 'fields[x]', 'mode[]', '__proto__[polluted]', 'constructor', ''])],
    [1, () => randomText(10)],
  ])();
  const one = () => `${rnd.pick(['', '', '!', '<', '<=', '>', '>=', '?', '?*', '!!', '<>'])}${rnd.chance(0.7) ? rnd.pick(WEIRD_STRINGS) : randomText(12)}`;
  const value = Array.from({ length: rnd.int(1, 3) }, one).join('|');
  return [key, value];
}

function randomQuery(method: string): Array<[string, string]> {
  const params: Array<[string, string]> = [];
  for (let i = rnd.int(0, 4); i > 0; i--) {
    rnd.weighted<() => void>([
      [4, () => params.push(filterParam())],
      [2, () => params.push(['q', randomQ()])],
      [2, () => params.push(...listParam('fields', selectTerm))],
      [1, () => params.push(...listParam('order_by', () => (rnd.chance(0.5) ? `${rnd.pick(['asc', 'desc', 'descending', 'sum'])}(${selectTerm()})` : selectTerm())))],
      [1, () => params.push(...listParam('group_by', selectTerm))],
      [1, () => params.push([rnd.pick(['limit', 'offset']), rnd.pick(['0', '1', '2', '10000', '10001', '-1', 'abc', '1e3', '', ' 5', '99999999999999999999', '1.5'])])],
      [method === 'GET' ? 0 : 2, () => params.push(['mode', rnd.pick(['query', 'query', 'Query', ''])])],
    ])();
  }
  return params;
}

/** encodeURIComponent that survives lone surrogates: they go out as their (invalid UTF-8) WTF-8 bytes. */
function enc(text: string): string {
  let out = '';
  let run = '';
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const paired = code >= 0xd800 && code <= 0xdbff && i + 1 < text.length && text.charCodeAt(i + 1) >= 0xdc00 && text.charCodeAt(i + 1) <= 0xdfff;
    if (code >= 0xd800 && code <= 0xdfff && !paired) {
      out += encodeURIComponent(run);
      run = '';
      out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    } else {
      run += text[i];
      if (paired) run += text[++i];
    }
  }
  return out + encodeURIComponent(run);
}

function encodeQuery(params: Array<[string, string]>): string {
  if (params.length === 0) return '';
  return `?${params.map(([k, v]) => (rnd.chance(0.05) ? `${k}=${v}` : `${enc(k)}=${enc(v)}`)).join('&')}`;
}

// ---------- fixture and snapshots ----------

const api = await startTestApi(t);
const otherKey = await api.newKey('fuzz-other', 'test');
const liveKey = await api.newKey('acme', 'live');

const ids = { all: [] as string[], foreign: [] as string[] };

async function seed(): Promise<void> {
  for (const name of ['Seed Ann', 'Seed Bob', 'Seed Cy']) {
    const res = await api.request('POST', '/customers', { json: { name, email: `${name.split(' ')[1].toLowerCase()}@example.com`, attrs: { tier: 'gold' } } });
    ids.all.push(res.body.id);
  }
  const shop = await api.request('POST', '/processing_accounts', { json: { name: 'Seed Shop' } });
  ids.all.push(shop.body.id);
}
await seed();
ids.foreign.push((await api.request('POST', '/customers', { key: otherKey, json: { name: 'Foreign' } })).body.id);
ids.foreign.push((await api.request('POST', '/customers', { key: liveKey, json: { name: 'Live' } })).body.id);

async function snapshot(): Promise<string> {
  const accounts = await api.db.raw(`select count(*)::int as n, max(modified_at) as m,
      md5(coalesce(string_agg(id || ':' || org_id || ':' || environment || ':' || type || ':' || data::text || ':' || modified_at::text, ',' order by id), '')) as h
    from accounts`);
  const events = await api.db.raw('select count(*)::int as n, max(seq) as s from events');
  return JSON.stringify([accounts.rows[0], events.rows[0]]);
}

function randomId(): string {
  return rnd.weighted<() => string>([
    [5, () => rnd.pick(ids.all)],
    [2, () => rnd.pick(ids.foreign)],
    [2, () => rnd.pick(['acct_', 'acct_0000000000000000000000', 'x'.repeat(300), '%00', '%zz', '%E2%82', '..', "'%20or%201=1", 'ümlaut', '🙂', '__proto__', 'constructor'])],
    [1, () => enc(randomText(20)) || 'empty'],
  ])();
}

interface Generated {
  method: string;
  path: string;
  query: Array<[string, string]>;
  version?: string;
  headers: Record<string, string>;
  body?: string | FormData;
  /** path plus the encoded query string, as sent */
  url: string;
  describe: string;
}

/** Unicode-rich but valid text: the values a real integrator might send. */
function validText(maxLength = 30): string {
  const text = rnd.chance(0.5) ? randomText(maxLength) : rnd.pick(['Ann', 'Zoë', '山田', 'O\'Neil', 'Ω 🙂', 'e\u0301', 'a%b_c*d', 'x|y', 'Robert"); drop table accounts;--']);
  return text.replace(/[\ud800-\udfff]/g, '').replace(/\u0000/g, '') || 'x';
}

const CLEAN_FILTERS: Record<'v1c' | 'v1p' | 'v2', Array<() => [string, string]>> = {
  v1c: [
    () => ['name', rnd.pick(['Seed Ann', 'Seed Bob|Seed Cy', '!Seed Ann', '?Seed*', validText()])],
    () => ['email', rnd.pick(['?*@example.com', 'null', '!null', 'ann@example.com'])],
    () => ['created_at', rnd.pick(['>2020-01-01', '<2099-01-01 00:00:00', '>=1/1/2020', '<=2030-01-01T00:00:00Z'])],
    () => ['address[city]', validText()],
    () => ['attrs[tier]', rnd.pick(['gold', 'silver|gold', '!gold', 'null'])],
    () => ['lower(name)', 'seed ann'],
    () => ['id', rnd.pick(ids.all)],
  ],
  v1p: [
    () => ['status', rnd.pick(['pending', 'active|inactive', '!denied'])],
    () => ['funding_delay', rnd.pick(['>1', '<=3', '2', '0|10'])],
    () => ['funding_style', rnd.pick(['net', 'gross|itemized'])],
    () => ['name', rnd.pick(['Seed Shop', '?*Shop*'])],
  ],
  v2: [
    () => ['type', rnd.pick(['customer', 'processing', 'customer|processing'])],
    () => ['contact_details[email]', rnd.pick(['?*@example.com', 'null', 'bob@example.com'])],
    () => ['processing[settings][funding][delay]', rnd.pick(['<5', '>=2', '3|4'])],
    () => ['processing[status][funding]', 'pending'],
    () => ['attrs[tier]', 'gold'],
    () => ['name', rnd.pick(['Seed Ann', '!Seed Bob', validText()])],
  ],
};

const CLEAN_Q: Record<'v1c' | 'v1p' | 'v2', string[]> = {
  v1c: ['name == "Seed Ann"', "email != null", 'created_at > date(2020-01-01)', 'attrs.tier == \'gold\'', 'address.city ? "*a*"', 'name != "x" && email == null', '!(name == "Seed Bob")'],
  v1p: ['status == "pending"', 'funding_delay >= 2', 'funding_style == "net"', 'name ? "*Shop*"'],
  v2: ['type == "customer"', 'contact_details.email != null', 'processing.settings.funding.delay < 5', 'attrs[tier] == "gold"', 'contact_details[email] ? "*@example.com"'],
};

function cleanBody(kind: 'v1c' | 'v1p' | 'v2', update: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (!update || rnd.chance(0.5)) body.name = validText();
  if (kind === 'v2' && !update) body.type = rnd.pick(['customer', 'processing']);
  if (rnd.chance(0.4)) {
    const email = `${rnd.pick(['a', 'b.c', 'd+e'])}${rnd.int(0, 99)}@example.com`;
    if (kind === 'v2') body.contact_details = { email };
    else if (kind === 'v1c') body.email = email;
  }
  if (rnd.chance(0.3)) body.address = { city: validText(), postal_code: String(rnd.int(10000, 99999)) };
  if (rnd.chance(0.3)) {
    const attrs: Record<string, unknown> = { tier: rnd.pick(['gold', 'silver']) };
    if (rnd.chance(0.3)) define(attrs, rnd.pick(PROTO_KEYS), { polluted: 'attrs' });
    if (rnd.chance(0.3)) attrs[validText(8)] = rnd.pick([1, 'x', null, [1, 2], { n: 1 }]);
    body.attrs = attrs;
  }
  if (kind === 'v1p' && rnd.chance(0.5)) Object.assign(body, { funding_delay: rnd.int(0, 10), funding_style: rnd.pick(['net', 'gross']) });
  if (kind === 'v1p' && update && rnd.chance(0.3)) body.status = rnd.pick(['active', 'inactive', 'pending']);
  if (kind === 'v2' && body.type === 'processing' && rnd.chance(0.5)) body.processing = { settings: { funding: { delay: rnd.int(0, 10) } } };
  return body;
}

/** A request an integrator could plausibly send: known fields, sane values, existing ids. */
function generateClean(): Generated {
  const method = rnd.weighted([[5, 'GET'], [3, 'POST'], [2, 'PUT'], [1, 'DELETE']] as const);
  const kind = rnd.pick(['v1c', 'v1p', 'v2'] as const);
  const collection = kind === 'v1c' ? 'customers' : kind === 'v1p' ? 'processing_accounts' : 'accounts';
  const version = kind === 'v2' ? rnd.pick(['v2', '2', 'v2.1-beta']) : rnd.pick([undefined, 'v1', '1']);
  const query: Array<[string, string]> = [];
  const filters = () => {
    for (let i = rnd.int(0, 2); i > 0; i--) query.push(rnd.pick(CLEAN_FILTERS[kind])());
    if (rnd.chance(0.3)) query.push(['q', rnd.pick(CLEAN_Q[kind])]);
  };
  const headers: Record<string, string> = {};
  let path = `/${collection}`;
  let body: string | undefined;
  const withId = method !== 'POST' && rnd.chance(0.5);
  if (withId) path += `/${rnd.pick(ids.all)}`;
  if (method === 'GET' && !withId) {
    filters();
    if (rnd.chance(0.3)) query.push(['order_by', rnd.pick(['name', 'desc(created_at)', 'asc(name)'])]);
    if (rnd.chance(0.3)) query.push(['limit', String(rnd.int(0, 20))], ['offset', String(rnd.int(0, 5))]);
  }
  if (method === 'GET' && rnd.chance(0.2)) query.push(['fields', rnd.pick(['*', 'id,name', 'id,created_at'])]);
  if (method === 'POST') {
    body = JSON.stringify(rnd.chance(0.3) ? { object: 'list', values: [cleanBody(kind, false), cleanBody(kind, false)] } : cleanBody(kind, false));
  }
  if (method === 'PUT') {
    if (!withId) {
      filters();
      query.push(['mode', 'query']);
      if (!query.some(([k]) => k !== 'mode')) query.unshift(['id', rnd.pick(ids.all)]);
    }
    body = JSON.stringify(cleanBody(kind, true));
  }
  if (method === 'DELETE' && !withId) query.push(['id', `${rnd.pick(ids.all)}|${rnd.pick(ids.all)}`], ['mode', 'query']);
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const url = path + encodeQuery(query);
  const describe = `${method} ${url.slice(0, 500)} v=${version ?? '-'} ${body?.slice(0, 300) ?? ''}`;
  return { method, path, query, version, headers, body, url, describe };
}

function generate(): Generated {
  if (rnd.chance(0.45)) return generateClean();
  const method = rnd.weighted([[4, 'GET'], [3, 'POST'], [2, 'PUT'], [2, 'DELETE']] as const);
  const collection = rnd.chance(0.93) ? rnd.pick(COLLECTIONS) : rnd.pick(ODD_COLLECTIONS);
  const withId = rnd.chance(method === 'POST' ? 0.05 : method === 'GET' ? 0.4 : 0.5);
  const path = `/${collection}${withId ? `/${randomId()}` : rnd.chance(0.05) ? '/' : ''}`;
  const query = randomQuery(method);
  const headers: Record<string, string> = {};
  const version = rnd.weighted<string | undefined>([[6, undefined], [3, 'v2'], [1, rnd.pick(['v1', '1', 'v2.3-beta', 'v3', 'banana', ''])]]);
  if (rnd.chance(0.05)) headers['Idempotency-Key'] = `fuzz-${rnd.int(0, 5)}`;
  let body: string | FormData | undefined;
  let bodyText = '';
  if (method !== 'GET' && rnd.chance(0.9)) {
    const kind = rnd.weighted([[6, 'json'], [2, 'form'], [1, 'multipart'], [1, 'raw']] as const);
    if (kind === 'json') {
      body = JSON.stringify(jsonBody());
      headers['Content-Type'] = rnd.pick(['application/json', 'application/json; charset=utf-8', 'application/vnd.api+json']);
    } else if (kind === 'form') {
      body = formBody();
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
    } else if (kind === 'multipart') {
      body = multipartBody();
    } else {
      body = rnd.pick(['{', '{"name":', 'null', '[1,2]', '"str"', '\u0000\u0001', '<xml/>', '{"name": "x"}{"name": "y"}', randomText(50)]);
      headers['Content-Type'] = rnd.pick(['application/json', 'text/plain', 'application/xml', 'multipart/form-data', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', '']);
    }
    // A multipart body is shown by its parts (name=value, a file by its name), so a failure can be replayed by hand.
    bodyText = typeof body === 'string' ? body : `[multipart ${[...body.entries()].map(([name, value]) => `${name}=${typeof value === 'string' ? JSON.stringify(value.slice(0, 60)) : `<file ${value.name}>`}`).join(' ')}]`;
  }
  const shown = bodyText.length > 300 ? `${bodyText.slice(0, 300)}…(${bodyText.length} chars)` : bodyText;
  const url = path + encodeQuery(query);
  const describe = `${method} ${url.slice(0, 500)} v=${version ?? '-'} ${headers['Content-Type'] ?? ''} ${shown}`;
  return { method, path, query, version, headers, body, url, describe };
}

// ---------- the run ----------

t.test(`fuzz seed=${SEED} (FUZZ_SEED to replay): ${REQUESTS} random requests`, async (t) => {
  const serverErrors: string[] = [];
  const badErrorBodies: string[] = [];
  const changedByRejected: string[] = [];
  const badSuccessBodies: string[] = [];
  const pollution: string[] = [];
  const counts = { ok: 0, rejected: 0, rejectedWrites: 0 };
  const started = Date.now();

  for (let i = 0; i < REQUESTS; i++) {
    const req = generate();
    const label = `#${i} ${req.describe}`;
    const isWrite = req.method !== 'GET';
    const before = isWrite ? await snapshot() : '';
    let res: ApiResponse;
    try {
      res = await api.request(req.method, req.url, { version: req.version, headers: req.headers, body: req.body });
    } catch (error) {
      serverErrors.push(`${label} → transport error ${(error as Error).message}`);
      continue;
    }
    const shownBody = JSON.stringify(res.body)?.slice(0, 300);
    if (res.status >= 500) {
      serverErrors.push(`${label} → ${res.status} ${shownBody}`);
    } else if (res.status >= 400) {
      counts.rejected += 1;
      const b = res.body;
      if (!b || typeof b !== 'object' || b.object !== 'error' || typeof b.error_type !== 'string' || typeof b.error_description !== 'string') {
        badErrorBodies.push(`${label} → ${res.status} ${shownBody}`);
      }
      if (isWrite) {
        counts.rejectedWrites += 1;
        const after = await snapshot();
        if (after !== before) changedByRejected.push(`${label} → ${res.status} ${shownBody}`);
      }
    } else {
      counts.ok += 1;
      // A projection (`fields=id,name`) carries exactly what was named: `object` only when asked for.
      const named = [...new URL(req.url, 'http://fuzz').searchParams].filter(([key]) => /^fields(\[\d*\])?$/.test(key)).flatMap(([, value]) => value.split(','));
      const projected = named.length > 0 && !named.some((f) => f.trim() === '*' || f.trim() === 'object');
      const shaped = typeof res.body === 'object' && res.body !== null && (projected || typeof res.body.object === 'string');
      if (res.status !== 200 || !shaped) badSuccessBodies.push(`${label} → ${res.status} ${shownBody}`);
      if (req.method === 'POST' && res.status === 200) {
        const created = res.body?.object === 'list' ? res.body.values : [res.body];
        for (const o of created) if (typeof o?.id === 'string') ids.all.push(o.id);
        if (ids.all.length > 40) ids.all.splice(0, ids.all.length - 40);
      }
    }
    const polluted = Object.keys(Object.prototype).concat(Object.keys(Array.prototype));
    if (polluted.length || ({} as Record<string, unknown>).polluted !== undefined) {
      pollution.push(`${label} → Object.prototype gained ${polluted.join(', ') || 'polluted'}`);
      for (const key of polluted) delete (Object.prototype as Record<string, unknown>)[key];
    }
    // Keep something to update and delete: the fuzzer's deletes eat the fixture.
    if (i % 50 === 49) {
      const left = await api.db('accounts').whereIn('id', ids.all).count({ n: '*' }).first();
      if (Number(left?.n) < 2) await seed();
    }
  }

  t.comment(`fuzz: ${counts.ok} accepted, ${counts.rejected} rejected (${counts.rejectedWrites} writes), ${Date.now() - started} ms`);
  t.same(serverErrors, [], 'no request is answered with a 5xx');
  t.same(badErrorBodies, [], 'every 4xx body is {object: "error", error_type, error_description}');
  t.same(changedByRejected, [], 'a rejected write changes no stored account or event');
  t.same(badSuccessBodies, [], 'every success is a 200 with a JSON object (with its object key unless a projection left it out)');
  t.same(pollution, [], 'no request pollutes Object.prototype');
  // The fuzzer itself must reach past the front door, or the checks above prove nothing.
  t.ok(counts.ok >= REQUESTS * 0.15, `a fair share of requests were accepted (${counts.ok})`);
  t.ok(counts.rejectedWrites >= REQUESTS * 0.1, `a fair share of writes were rejected (${counts.rejectedWrites})`);
});

// ---------- the property tier (fast-check, seeded) ----------
//
// The same invariants as properties: fast-check draws the inputs from SEED and, on a failure,
// shrinks them to a small counterexample. Each property runs for its share of FUZZ_SECONDS (a few
// seconds in `npm test`; `npm run bench:fuzz` gives them minutes).

const FUZZ_SECONDS = Number(process.env.FUZZ_SECONDS ?? 4);

async function holds(t: Test, name: string, property: fc.IAsyncPropertyWithHooks<any> | fc.IPropertyWithHooks<any>, share: number, minimumRuns: number): Promise<void> {
  const details = await fc.check(property, { seed: SEED, numRuns: 10_000_000, interruptAfterTimeLimit: FUZZ_SECONDS * 1000 * share, markInterruptAsFailure: false });
  // The time limit abandons the run in flight; it must end before the next property compares stored state.
  await lastRequest;
  t.notOk(details.failed, details.failed ? fc.defaultReportMessage(details) : `${name}: ${details.numRuns} runs`);
  t.ok(details.numRuns >= minimumRuns, `${name}: at least ${minimumRuns} runs in its time (${details.numRuns})`);
}

/** Only our own errors, with a client's status, may leave a parser. */
function refusedAsClientError(error: unknown): boolean {
  return error instanceof ApiError && error.status >= 400 && error.status < 500 && error.errorType.length > 0;
}

const qText = fc.oneof(
  fc.array(fc.constantFrom(...Q_TOKENS), { maxLength: 24 }).chain((tokens) => fc.constantFrom(' ', '').map((sep) => tokens.join(sep))),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.tuple(fc.constantFrom(...Q_FIELDS), fc.constantFrom('==', '!=', '>', '?', '<='), fc.oneof(fc.string({ maxLength: 20 }).map((s) => JSON.stringify(s)), fc.double().map(String), fc.constantFrom('null', 'true', 'date(2024-01-31)')))
    .map((parts) => parts.join(' ')),
);
const listParamName = fc.constantFrom('q', 'fields', 'order_by', 'group_by', 'limit', 'offset', 'name', 'attrs[tier]', 'fields[0]', 'order_by[]', 'created_at', 'q[0]', 'format', 'mode');
const listParamValue = fc.oneof(qText, fc.constantFrom(...FIELD_PATHS, '*', 'count', 'desc(created_at)', 'sum(amount)', '-1', '1e400', 'NaN'), fc.string({ maxLength: 40 }));

/** What the request left stored: accounts (hashed) and how many transactions, webhooks, links, methods and events. */
async function storedState(): Promise<string> {
  const counts = await api.db.raw(`select (select count(*) from transactions) t, (select count(*) from webhooks) w, (select count(*) from payment_links) l,
      (select count(*) from payment_methods) m, (select max(modified_at) from transactions) tm`);
  return (await snapshot()) + JSON.stringify(counts.rows[0]);
}

const formKeyArb = fc.tuple(
  fc.constantFrom('name', 'email', 'address', 'attrs', 'values', 'object', 'type', 'amount', 'payment_method', 'trigger', 'url', ...PROTO_KEYS),
  fc.array(fc.oneof(fc.constantFrom('', '0', '1', 'city', 'card', 'card_number', '__proto__', 'prototype', '999999999', '-1'), fc.string({ maxLength: 5 })), { maxLength: 6 }),
  fc.constantFrom('', '[', ']', '[[', '][', '.x'),
).map(([base, segments, tail]) => `${base}${segments.map((s) => `[${s}]`).join('')}${tail}`);
const formPairs = fc.array(fc.tuple(formKeyArb, fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('list', 'card', 'payment', '4242424242424242', '12/35'))), { maxLength: 8 });

type Sent = { method: string; path: string; headers: Record<string, string>; body?: string | FormData };
const writeTarget = fc.constantFrom(
  ['POST', '/customers'], ['POST', '/processing_accounts'], ['POST', '/transactions'], ['POST', '/webhooks'], ['POST', '/payment_links'], ['POST', '/payment_methods'],
  ['PUT', '/customers/ID'], ['PUT', '/customers?mode=query&name=Seed%20Ann'],
);
const decodedBody: fc.Arbitrary<Sent> = fc.tuple(writeTarget, fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((value) => ({ headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(value) })),
  fc.string({ unit: 'binary', maxLength: 300 }).map((text) => ({ headers: { 'Content-Type': 'application/json' }, body: text })),
  formPairs.map((pairs) => ({ headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: pairs.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&') })),
  formPairs.map((pairs) => ({ headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: pairs.map(([k, v]) => `${k}=${v}`).join('&') })),
  formPairs.map((pairs) => {
    const data = new FormData();
    for (const [k, v] of pairs) data.append(k, v);
    return { headers: {} as Record<string, string>, body: data as string | FormData };
  }),
)).map(([[method, path], sent]) => ({ method, path: path.replace('ID', ids.all[0] ?? 'acct_none'), ...sent }));

/** Header values a client could send: printable Latin-1, no line breaks. */
const headerValue = fc.oneof(
  fc.array(fc.integer({ min: 0x20, max: 0xff }).filter((c) => c !== 0x7f), { maxLength: 80 }).map((codes) => String.fromCharCode(...codes).trim()),
  fc.constantFrom('', 'v1', 'v2', 'v3', 'V2', 'application/json', 'text/plain', 'multipart/form-data', 'application/x-www-form-urlencoded; charset=utf-16', '*/*', 'text/csv', '1.2.3.4, 5.6.7.8', 'Basic', 'Bearer ', 'Basic Og=='),
);
const headerName = fc.constantFrom('X-API-Version', 'Idempotency-Key', 'Content-Type', 'Accept', 'X-Request-Id', 'X-Forwarded-For', 'Authorization', 'Origin', 'Accept-Encoding', 'Range');
const withHeaders: fc.Arbitrary<Sent> = fc.tuple(fc.constantFrom(['GET', '/customers'], ['POST', '/customers'], ['GET', '/customers?fields=count'], ['PUT', '/customers/ID']), fc.dictionary(headerName, headerValue, { maxKeys: 5 }))
  .map(([[method, path], headers]) => ({ method, path: path.replace('ID', ids.all[0] ?? 'acct_none'), headers, body: method === 'GET' ? undefined : JSON.stringify({ name: 'Header Hal' }) }));

const idText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 80 }).map(encodeURIComponent),
  fc.tuple(fc.constantFrom('acct_', 'txn_', 'pay_', 'wh_', 'pm_', 'inv_', 'test_client_key_', 'int_', ''), fc.string({ unit: 'grapheme-ascii', maxLength: 40 })).map(([p, s]) => encodeURIComponent(p + s)),
  fc.constantFrom('%', '%zz', '%E2%82', '%00', '..', '%2e%2e', '__proto__', 'constructor', 'x'.repeat(5000), '%F0%9F%99%82'),
);
const idTarget: fc.Arbitrary<Sent & { page: boolean }> = fc.tuple(
  fc.constantFrom('GET', 'PUT', 'DELETE'),
  fc.constantFrom('/customers/', '/transactions/', '/webhooks/', '/payment_links/', '/payment_methods/', '/invoices/', '/intents/', '/pay/', '/checkout/', '/enroll/', '/elements/checkout/'),
  idText,
).map(([method, prefix, id]) => {
  const page = ['/pay/', '/checkout/', '/enroll/', '/elements/checkout/'].includes(prefix);
  const put = method === 'PUT' && !page;
  const headers: Record<string, string> = put ? { 'Content-Type': 'application/json' } : {};
  return { method: page ? 'GET' : method, path: prefix + id, headers, body: put ? '{"name":"Id Ida"}' : undefined, page };
});

let lastRequest: Promise<unknown> = Promise.resolve();

function answeredWell(sent: Sent & { page?: boolean }, problems: string[]): Promise<boolean> {
  const run = checkAnswer(sent, problems);
  lastRequest = run.catch(() => undefined);
  return run;
}

/** Sends `sent` as a client would; false (with the reason noted) when the answer breaks an invariant. */
async function checkAnswer(sent: Sent & { page?: boolean }, problems: string[]): Promise<boolean> {
  const isWrite = sent.method !== 'GET';
  const before = isWrite ? await storedState() : '';
  const res = await api.request(sent.method, sent.path, { headers: sent.headers, body: sent.body });
  const label = `${sent.method} ${sent.path.slice(0, 200)} ${JSON.stringify(sent.headers)} → ${res.status} ${JSON.stringify(res.body)?.slice(0, 200)}`;
  if (res.status >= 500) return !problems.push(`5xx: ${label}`);
  if (res.status >= 400 && !sent.page) {
    const b = res.body;
    if (!b || typeof b !== 'object' || b.object !== 'error' || typeof b.error_type !== 'string' || typeof b.error_description !== 'string') return !problems.push(`error format: ${label}`);
    if (isWrite && (await storedState()) !== before) return !problems.push(`half-written: ${label}`);
  }
  return true;
}

t.test(`property tier seed=${SEED}, ${FUZZ_SECONDS} s (FUZZ_SECONDS for longer)`, async (t) => {
  await holds(t, 'parseQ answers an AST or a 400 BadRequest', fc.property(qText, (text) => {
    try {
      parseQ(text);
      return true;
    } catch (error) {
      return error instanceof ApiError && error.status === 400 && error.errorType === 'BadRequest';
    }
  }), 0.1, 200);
  await holds(t, 'list parameters parse or are refused with a 4xx', fc.property(fc.array(fc.tuple(listParamName, listParamValue), { maxLength: 6 }), (params) => {
    try {
      parseListQuery(params);
      return true;
    } catch (error) {
      return refusedAsClientError(error);
    }
  }), 0.1, 200);
  const problems: string[] = [];
  await holds(t, 'bodies (JSON, form with brackets, multipart): never 5xx, errors in the contract format, no half-written change', fc.asyncProperty(decodedBody, (sent) => answeredWell(sent, problems)), 0.35, 20);
  await holds(t, 'headers: never 5xx, errors in the contract format', fc.asyncProperty(withHeaders, (sent) => answeredWell(sent, problems)), 0.2, 20);
  await holds(t, 'ids in paths: never 5xx, API errors in the contract format', fc.asyncProperty(idTarget, (sent) => answeredWell(sent, problems)), 0.25, 20);
  t.same(problems, [], 'no request broke an invariant');
  t.same(Object.keys(Object.prototype), [], 'nothing polluted Object.prototype');
});
