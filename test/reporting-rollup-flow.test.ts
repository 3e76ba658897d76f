/**
 * The rollup refreshes beside the mirror's passes (reporting/mirror.ts): while changes flow into
 * the days it is refreshing (new transactions, changes and deletions of ones it counts, on the
 * same days), it must end holding what aggregating the mirror afresh gives, each transaction once.
 * Refreshes come every 20 ms here, so most of them run while a pass copies.
 */
import t from 'tap';
import { createDb, rows } from '../api/db/connection.ts';
import { loadConfig } from '../api/config.ts';
import { createLogger } from '../api/logger.ts';
import { READ_SETTINGS, rollupMonthsSelect, rollupSelect, rollupTable } from '../reporting/columns.ts';
import { Mirror } from '../reporting/mirror.ts';
import { compileReport } from '../reporting/report.ts';
import { openStore } from '../reporting/store.ts';
import { parseListQuery } from '../api/query/listQuery.ts';
import type { Version } from '../api/engine/family.ts';
import { freshDatabase } from './helpers/db.ts';
import { eventually } from './helpers/wait.ts';
import { positionNow, tempDataDir } from './reporting-support.ts';

const ROUNDS = 200;
/** Eight days in two months; each gets changes of its earlier transactions until a round of its own, then new ones only. */
const DAYS = ['2024-07-10', '2024-07-11', '2024-07-12', '2024-07-13', '2024-08-01', '2024-08-02', '2024-08-03', '2024-08-04'];
const lastChange = (day: number) => 20 + 20 * day;

const databaseUrl = await freshDatabase(t);
const db = createDb(databaseUrl, 4);
t.teardown(() => db.destroy());
const store = openStore(loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: tempDataDir(t) }));
const mirror = new Mirror(db, store, createLogger('silent', 'reporting'), { pollIntervalMs: 50, batchIntervalMs: 5, rollupRefreshMs: 20 });
t.teardown(async () => {
  await mirror.stop();
  await store.close();
});
await mirror.start();

/** One commit: a new transaction on each day, and on one day a change or deletion of one made a round of days before. */
async function commitRound(round: number): Promise<void> {
  await db.transaction(async (trx) => {
    await rows(trx, `insert into transactions (id, org_id, environment, type, data, created_at, modified_at)
      select 'txn_flow' || ? || '_' || d, 'org_flow_' || (d % 2), 'test', 'payment',
             jsonb_build_object('amount', 100 + ? * 3 + d, 'status', (array['processed', 'authorized'])[1 + (? + d) % 2], 'fee', d),
             (?::text[])[d]::date + interval '12 hours' + ? * interval '1 second', now()
        from generate_series(1, ?) d`, [round, round, round, DAYS, round, DAYS.length]);
    const day = round % DAYS.length;
    if (round < DAYS.length || round > lastChange(day)) return;
    const earlier = `txn_flow${round - DAYS.length}_${1 + day}`;
    if (round % 5 === 0) await rows(trx, 'delete from transactions where id = ?', [earlier]);
    else await rows(trx, `update transactions set data = data || jsonb_build_object('amount', 9000 + ?::int, 'status', 'voided'), modified_at = now() where id = ?`, [round, earlier]);
  });
}

async function rollupBesideMirror(): Promise<{ kept: unknown[]; afresh: unknown[] }> {
  const columns = 'org_id, environment, grain, toString(day) AS day, type, status, currency, n, amount_count, toString(amount_sum) AS amount_sum, toString(amount_squares) AS amount_squares, amount_min, amount_max, fee_count, toString(fee_sum) AS fee_sum, fee_min, fee_max';
  const order = 'ORDER BY org_id, environment, grain, day, type, status, currency';
  const kept = await store.select(`SELECT ${columns} FROM ${rollupTable(store.table)} FINAL ${order}`);
  const days = rollupSelect(store.table, 'all', '0');
  const afresh = await store.select(`SELECT ${columns} FROM (${days} UNION ALL ${rollupMonthsSelect(days, '0')}) ${order}`);
  return { kept, afresh };
}

t.test('with changes flowing into the days being refreshed, the rollup ends as the mirror aggregated afresh', async (t) => {
  for (let round = 0; round < ROUNDS; round += 1) {
    await commitRound(round);
    // Every few commits a pass of their own, so refreshes and passes interleave.
    if (round % 10 === 0) t.ok(await mirror.waitFor(await positionNow(db), 60_000, { rollup: false }), `round ${round} mirrored`);
  }
  t.ok(await mirror.waitFor(await positionNow(db), 60_000), 'the rollup takes every change');
  const { kept, afresh } = await rollupBesideMirror();
  t.ok(kept.length > 10, `${kept.length} groups`);
  t.same(kept, afresh);
});

t.test("a reader's query and the rollup's refresh read their parts on their own thread, not through ClickHouse's reader pool", async (t) => {
  t.ok(await mirror.waitFor(await positionNow(db), 60_000), 'everything rolled up to begin with');
  // Merges read parts too: stopped (the mirror's and the rollup's), the reader pool's counters move for the statements below alone.
  await store.command('SYSTEM STOP MERGES');
  t.teardown(() => store.command('SYSTEM START MERGES'));
  const poolReads = async () => Number((await store.select<{ reads: string }>(
    `SELECT toString(sum(value)) AS reads FROM system.events WHERE event IN ('ThreadPoolReaderPageCacheHit', 'ThreadPoolReaderPageCacheMiss')`))[0].reads);
  const before = await poolReads();
  const tenant = { orgId: 'org_flow_0', environment: 'test' as const };
  const query = { tenant, version: 'v1' as Version, query: parseListQuery([['fields', 'count,sum(amount)']]) };
  const report = compileReport(query, store.table, undefined, [DAYS[0]]);
  t.ok(report.rollup, 'the reader reads the rollup, and the day from the mirror');
  const [answer] = await store.select<{ _c0: string }>(report.sql, report.params);
  t.ok(Number(answer._c0) > 0, `it counts ${answer._c0}`);
  store.noteChangedDays([{ ...tenant, day: DAYS[0], fresh: null }]);
  t.same(await eventually(() => store.changedDays(tenant), (days) => days.length === 0, 30_000), [], 'the refresh aggregated the day again');
  const after = await poolReads();
  t.equal(after - before, 0, 'the reader pool read nothing for them');
  // The counters are live: the same query with ClickHouse's default read method goes through the pool.
  await store.select(report.sql.replace(`, ${READ_SETTINGS}`, ''), report.params);
  t.ok(await poolReads() > after, 'read the default way, the same query goes through the pool');
});
