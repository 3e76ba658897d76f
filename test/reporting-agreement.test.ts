/**
 * Agreement, as a property: random transactions (amounts, statuses, attrs, dates, missing values,
 * Unicode text) and random queries (test/query-diff.ts: every comparison, function and aggregate,
 * group_by, both versions, quoting and money literals), each answered by the Postgres compiler
 * (api/engine/operations.ts `aggregate`) and by the ClickHouse compiler over the mirror
 * (reporting/report.ts), must give the same rows — or both refuse it; and rows the Postgres list
 * shows must count and sum as the report does. Then a round of updates, deletes and inserts,
 * mirrored, and the same again. A third of each round are queries the rollup covers
 * (reporting/columns.ts), which the compiler must answer from it; and the rollup must hold what
 * aggregating the mirror afresh gives. `npm run bench:query-diff` runs the same with many more.
 *
 * Seeded (REPORTING_AGREEMENT_SEED to replay a failure); REPORTING_AGREEMENT_QUERIES per round.
 */
import t, { type Test } from 'tap';
import { createDb, rows } from '../api/db/connection.ts';
import type { Tenant, Version } from '../api/engine/family.ts';
import { aggregate, type OperationContext } from '../api/engine/operations.ts';
import { collectionByPath } from '../api/families/index.ts';
import { parseListQuery } from '../api/query/listQuery.ts';
import { loadConfig } from '../api/config.ts';
import { createLogger } from '../api/logger.ts';
import { covers } from '../reporting/feed.ts';
import { Mirror } from '../reporting/mirror.ts';
import { compileReport, runReport } from '../reporting/report.ts';
import { rollupMonthsSelect, rollupSelect, rollupTable } from '../reporting/columns.ts';
import { openStore } from '../reporting/store.ts';
import { freshDatabase } from './helpers/db.ts';
import { positionNow, tempDataDir } from './reporting-support.ts';
import { compareQuery, compareRecount, Dataset, inliningDb, QueryGenerator, Random, STATUSES, TENANTS, TYPES, type Paths, type RandomQuery } from './query-diff.ts';

const SEED = Number(process.env.REPORTING_AGREEMENT_SEED ?? Date.now() % 1_000_000);
const QUERIES = Number(process.env.REPORTING_AGREEMENT_QUERIES ?? 80);
const ROWS = 2500;
t.comment(`seed ${SEED}`);

const r = new Random(SEED);
const { int, pick, chance } = { int: r.int.bind(r), pick: <T>(items: readonly T[]) => r.pick(items), chance: r.chance.bind(r) };
const generator = new QueryGenerator(r);
const dataset = new Dataset(r);

interface Term {
  text: string;
  versions?: Version[];
}

function forVersion(terms: Term[], version: Version): string[] {
  return terms.filter((term) => !term.versions || term.versions.includes(version)).map((term) => term.text);
}

function literalFor(field: string, version: Version): string {
  if (field === 'status') return JSON.stringify(pick(STATUSES));
  return JSON.stringify(version === 'v1' ? pick(['payment', 'credit', 'reversal', 'refund']) : pick(TYPES));
}

/**
 * Queries the rollup keeps everything for (tenant, day, type, status, currency, money partials):
 * the compiler must read the rollup for them, and answer as Postgres does.
 */
const COVERED_GROUPS: Term[] = [
  { text: 'type' }, { text: 'status', versions: ['v1'] }, { text: 'status.value', versions: ['v2'] }, { text: 'currency' },
  { text: 'year(created_at)' }, { text: 'month(created_at)' }, { text: 'monthname(created_at)' }, { text: 'day(created_at)' },
  { text: 'dayname(created_at)' }, { text: 'dayofweek(created_at)' }, { text: 'dayofyear(created_at)' }, { text: 'weekofyear(created_at)' },
  { text: 'date(created_at)' }, { text: 'last_day(created_at)' }, { text: 'year(date(created_at))' }, { text: 'upper(currency)' },
];
const COVERED_AGGREGATES: Term[] = [
  { text: 'count' }, { text: 'count(amount)' }, { text: 'sum(amount)' }, { text: 'avg(amount)' }, { text: 'min(amount)' }, { text: 'max(amount)' },
  { text: 'stddev(amount)' }, { text: 'variance(amount)' }, { text: 'count(currency)' }, { text: 'max(type)' }, { text: 'min(status)', versions: ['v1'] },
  { text: 'max(date(created_at))' }, { text: 'min(month(created_at))' }, { text: 'avg(month(created_at))' }, { text: 'sum(fee)' },
];

function coveredCondition(version: Version): string {
  const status = version === 'v1' ? 'status' : 'status.value';
  return pick([
    () => `${status} ${pick(['==', '!='])} ${literalFor('status', version)}`,
    () => `type ${pick(['==', '!='])} ${literalFor('type', version)}`,
    () => `currency ${pick(['==', '!=', '=='])} ${pick(['"USD"', '"CAD"', 'null'])}`,
    () => `${pick(['month', 'year', 'day', 'dayofweek', 'dayofyear', 'weekofyear'])}(created_at) ${pick(['==', '>=', '<'])} ${pick([1, 3, 6, 2024])}`,
    () => `(${status} == "processed" || currency == null)`,
    () => `!(type == ${literalFor('type', version)})`,
    () => `${status} ? "*ss*"`,
  ])();
}

function randomCoveredQuery(): { version: Version; params: Array<[string, string]> } {
  const version: Version = chance(0.5) ? 'v1' : 'v2';
  const groups = [...new Set(Array.from({ length: int(0, 2) }, () => pick(forVersion(COVERED_GROUPS, version))))];
  const aggregates = [...new Set(Array.from({ length: int(1, 4) }, () => pick(forVersion(COVERED_AGGREGATES, version))))];
  const params: Array<[string, string]> = [['fields', [...groups.filter(() => chance(0.85)), ...aggregates].join(',')]];
  for (const group of groups) params.push(['group_by[]', group]);
  if (chance(0.6)) params.push(['q', coveredCondition(version)]);
  if (groups.length && chance(0.3)) params.push(['order_by', `${pick(['asc', 'desc'])}(${pick(groups)})`]);
  return { version, params };
}

// ---------- run ----------

const databaseUrl = await freshDatabase(t);
const db = createDb(databaseUrl, 4);
t.teardown(() => db.destroy());
const config = loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: tempDataDir(t) });
const store = openStore(config);
// The rollup is recomputed when a reader waits for it, not on a timer: what each subtest waits for decides.
const mirror = new Mirror(db, store, createLogger('silent', 'reporting'), { pollIntervalMs: 200, batchIntervalMs: 20, rollupRefreshMs: 600_000 });
t.teardown(async () => {
  await mirror.stop();
  await store.close();
});
await dataset.insert(db, ROWS);
await mirror.start();

const collection = collectionByPath.get('transactions')!;
const paths: Paths = { pg: inliningDb(db), store, collection };
const stats = { agreed: 0, bothRefused: 0, pgFailedChRefused: 0, disagreed: 0, recounted: 0, fromRollup: 0, fromMonths: 0 };

/** `rollup`: wait for the rollup's recompute too; without it, the days changed since are read from the mirror. */
async function agreementRound(t: Test, label: string, rollup = true): Promise<void> {
  t.ok(await mirror.waitFor(await positionNow(db), 60_000, { rollup }), `${label}: mirror caught up`);
  if (!rollup) t.ok(TENANTS.some((tenant) => store.changedDays(tenant).length > 0), `${label}: days not rolled up yet, which readers read from the mirror`);
  for (let i = 0; i < QUERIES * 1.5; i += 1) {
    // The last third of a round: queries the rollup covers, which must be read from it.
    const covered = i >= QUERIES;
    const { version, params }: RandomQuery = covered ? randomCoveredQuery() : generator.query();
    const tenant = pick(TENANTS);
    const grain = (() => {
      try {
        const query = parseListQuery(params);
        return compileReport({ tenant, version, query }, store.table, undefined, store.changedDays(tenant)).grain;
      } catch {
        return undefined;
      }
    })();
    const fromRollup = grain !== undefined;
    if (fromRollup) stats.fromRollup += 1;
    if (grain === 'month') stats.fromMonths += 1;
    if (covered && !fromRollup) t.fail(`${label} #${i} ${version} ${new URLSearchParams(params)}: the rollup covers it, yet the mirror was read`);
    const result = await compareQuery(paths, tenant, { version, params });
    stats[result.verdict] += 1;
    if (result.verdict === 'disagreed') t.fail(`${label} #${i}`, result.detail ?? {});
    // The list path: every few queries, rows the Postgres list shows recounted against the report.
    if (i % 3 === 0) {
      const recount = await compareRecount(paths, tenant, generator.recount());
      stats.recounted += 1;
      if (recount.verdict === 'disagreed') t.fail(`${label} #${i} recount`, recount.detail ?? {});
    }
  }
}

t.test('random data, random queries: Postgres and ClickHouse agree', async (t) => {
  await agreementRound(t, 'initial');
});

t.test('after updates, deletes and inserts, mirrored and not yet rolled up: they still agree', async (t) => {
  await dataset.change(db);
  await agreementRound(t, 'changed', false);
  t.comment(`agreed ${stats.agreed} (${stats.fromRollup} read from the rollup, ${stats.fromMonths} from its months), both refused ${stats.bothRefused}, Postgres failed and ClickHouse refused ${stats.pgFailedChRefused}, list recounts ${stats.recounted}`);
  t.ok(stats.agreed > QUERIES, 'most random queries have an answer to compare');
});

t.test('once the changed days are recomputed, with their months: they still agree, and queries by month read the months', async (t) => {
  await agreementRound(t, 'recomputed');
  t.ok(TENANTS.every((tenant) => store.changedDays(tenant).length === 0), 'no day trails');
  t.ok(stats.fromMonths > 0, `${stats.fromMonths} queries read the rollup's months`);
});

t.test('the mirror holds exactly the rows of Postgres (FINAL view), per tenant', async (t) => {
  t.ok(await mirror.waitFor(await positionNow(db), 60_000));
  const pgCounts = await rows<{ org_id: string; environment: string; n: number; total: string }>(db,
    `select org_id, environment, count(*)::bigint as n, coalesce(sum((data->>'amount')::bigint), 0)::text as total from transactions group by 1, 2 order by 1, 2`);
  const chCounts = await store.select<{ org_id: string; environment: string; n: number; total: string }>(
    `SELECT org_id, environment, count() AS n, toString(sum(ifNull(amount, 0))) AS total FROM ${store.table} FINAL GROUP BY org_id, environment ORDER BY org_id, environment`);
  t.same(chCounts.map((r) => [r.org_id, r.environment, Number(r.n), r.total]), pgCounts.map((r) => [r.org_id, r.environment, Number(r.n), r.total]));
});



t.test('a reader finds its own write before the rollup recomputes its day, and other tenants read as Postgres', async (t) => {
  const [changed, other] = [TENANTS[0], TENANTS[2]];
  t.ok(await mirror.waitFor(await positionNow(db), 60_000), 'everything rolled up to begin with');
  await rows(db, `insert into transactions (id, org_id, environment, type, data) values ('txn_agree_own', ?, ?, 'payment', '{"amount": 123, "status": "processed"}')`,
    [changed.orgId, changed.environment]);
  const target = await positionNow(db);
  const count = { query: parseListQuery([['fields', 'count,sum(amount)']]), version: 'v1' as Version };
  t.ok(await mirror.waitFor(target, 60_000, { rollup: false }), 'the mirror has the write');
  t.notOk(covers(mirror.rollupPosition, target), 'while its day is not rolled up yet');
  t.ok(compileReport({ tenant: changed, ...count }, store.table, undefined, store.changedDays(changed)).rollup, 'the reader reads the rollup');
  const truth = async (tenant: Tenant) => (await aggregate({ tx: db, tenant, version: 'v1', collection } as unknown as OperationContext, count.query)).values;
  t.same(await runReport(store, { tenant: changed, ...count }), await truth(changed), 'and finds its own write');
  t.same(await runReport(store, { tenant: other, ...count }), await truth(other), 'another tenant reads as Postgres too');
});

/** The rollup's rows (days and months) beside the same groups aggregated from the mirror afresh. */
async function rollupBesideMirror(): Promise<{ kept: Array<{ grain: number }>; afresh: unknown[] }> {
  const columns = 'org_id, environment, grain, toString(day) AS day, type, status, currency, n, amount_count, toString(amount_sum) AS amount_sum, toString(amount_squares) AS amount_squares, amount_min, amount_max, fee_count, toString(fee_sum) AS fee_sum, fee_min, fee_max';
  const order = 'ORDER BY org_id, environment, grain, day, type, status, currency';
  const kept = await store.select<{ grain: number }>(`SELECT ${columns} FROM ${rollupTable(store.table)} FINAL ${order}`);
  const days = rollupSelect(store.table, 'all', '0');
  const afresh = await store.select(`SELECT ${columns} FROM (${days} UNION ALL ${rollupMonthsSelect(days, '0')}) ${order}`);
  return { kept, afresh };
}

t.test('the rollup holds what aggregating the mirror afresh gives, after the changes', async (t) => {
  // More tenants at once than one recompute statement covers (TENANTS_PER_REFRESH).
  await rows(db,
    `insert into transactions (id, org_id, environment, type, data, created_at, modified_at)
     select 'txn_agree_many' || g, 'org_agree_many_' || g, 'test', 'payment', jsonb_build_object('amount', g, 'status', 'processed'),
            timestamptz '2024-05-01 00:00:00+00' + g * interval '1 hour', now()
       from generate_series(1, 250) g`);
  t.ok(await mirror.waitFor(await positionNow(db), 60_000), 'the mirror reached the inserts');
  const { kept, afresh } = await rollupBesideMirror();
  t.ok(kept.length > 100, `${kept.length} groups`);
  t.ok(kept.some((row) => Number(row.grain) === 1), 'months among them');
  t.same(kept, afresh);
});

t.test('new transactions added to the rollup count once, in passes of their own, with later changes, and under a deleted id used again', async (t) => {
  const tenant: Tenant = { orgId: 'org_agree_added', environment: 'test' };
  const pay = (id: string, amount: number, at: string, status = 'processed') => rows(db,
    `insert into transactions (id, org_id, environment, type, data, created_at, modified_at) values (?, ?, ?, 'payment', ?::jsonb, ?, now())`,
    [id, tenant.orgId, tenant.environment, JSON.stringify({ amount, status, fee: amount % 7 }), at]);
  const mirrored = async (label: string, rollup: boolean) => t.ok(await mirror.waitFor(await positionNow(db), 60_000, { rollup }), label);
  // Two days with groups in the rollup, one transaction of them to be deleted and its id used again.
  for (let i = 0; i < 20; i += 1) await pay(`txn_added_old${i}`, 1000 + i, `2024-07-${10 + (i % 2)} 12:00:00+00`);
  await mirrored('the first rows are rolled up', true);
  // New ones, each commit mirrored by a pass of its own before the rollup takes them: smaller and
  // greater amounts than the groups held, a status of its own (a new group), a day of its own.
  await pay('txn_added_new0', 3, '2024-07-10 13:00:00+00');
  await mirrored('a first new one mirrored', false);
  await pay('txn_added_new1', 900_000, '2024-07-11 13:00:00+00');
  await pay('txn_added_new2', 77, '2024-07-11 14:00:00+00', 'authorized');
  await mirrored('two more mirrored', false);
  await pay('txn_added_new3', 55, '2024-07-12 09:00:00+00');
  // Made and changed before the rollup takes it: it counts as it stands last.
  await rows(db, `update transactions set data = data || '{"amount": 123456, "status": "voided"}'::jsonb where id = 'txn_added_new0'`);
  await rows(db, `delete from transactions where id = 'txn_added_new3'`);
  await mirrored('the changes mirrored', false);
  t.ok(store.changedDays(tenant).length > 0, 'the new ones trail in the rollup until it takes them');
  await mirrored('the rollup takes them', true);
  let { kept, afresh } = await rollupBesideMirror();
  t.same(kept, afresh, 'the rollup holds each new transaction once, as it stands');
  // A transaction the rollup counts, deleted and made again under its id in one database
  // transaction: its change is an insert, yet the rollup counted the old one.
  await db.transaction(async (trx) => {
    await rows(trx, `delete from transactions where id = 'txn_added_old0'`);
    await rows(trx, `insert into transactions (id, org_id, environment, type, data, created_at, modified_at)
      values ('txn_added_old0', ?, ?, 'payment', '{"amount": 5, "status": "processed"}', '2024-07-10 12:00:00+00', now())`, [tenant.orgId, tenant.environment]);
  });
  await mirrored('the id used again is rolled up', true);
  ({ kept, afresh } = await rollupBesideMirror());
  t.same(kept, afresh, 'the old transaction is gone from the rollup, the new one counted once');
  const count = { query: parseListQuery([['fields', 'count,sum(amount),min(amount),max(amount)'], ['group_by[]', 'status']]), version: 'v1' as Version };
  const truth = (await aggregate({ tx: db, tenant, version: 'v1', collection } as unknown as OperationContext, count.query)).values;
  t.ok(compileReport({ tenant, ...count }, store.table, undefined, store.changedDays(tenant)).rollup, 'the query reads the rollup');
  t.same(await runReport(store, { tenant, ...count }), truth, 'and answers as Postgres does');
});
