/**
 * `node bench/chdb-insert.ts`: the CPU one mirror pass's insert costs embedded chdb, the floor
 * under the reporting process's CPU while changes flow (a pass every REPORTING_BATCH_INTERVAL).
 * Each insert carries BENCH_INSERT_ROWS feed lines (default 25: 1,000 tx/s in 40 passes); it is
 * timed by process.cpuUsage (Node and every chdb thread, background merges included) over
 * BENCH_INSERTS inserts (default 100) per round, BENCH_ROUNDS rounds (default 3), the targets
 * alternated, into:
 *   - the mirror table through ReportingStore.insertLines, the derived values Postgres computed
 *     (the pass's own statement, reporting/columns.ts FeedShape);
 *   - the same table, the `data` document from which its DEFAULTs derive the columns (a rebuild's statement);
 *   - a MergeTree of the feed's nine columns as plain text (a part's cost for a narrow table);
 *   - a Null table (parsing and planning the INSERT and reading its rows: no part is written).
 * BENCH_DIR chooses where chdb keeps its data (default: bench/chdbDir.ts): part files are created
 * and removed at the insert rate, so the file system's cost shows here as well.
 */
import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { createChdbConnection } from 'chdb/connection';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FEED_COLUMNS, MIRROR_COLUMNS } from '../reporting/columns.ts';
import { ReportingStore } from '../reporting/store.ts';
import { chdbBenchDir } from './chdbDir.ts';

const ROWS = Number(process.env.BENCH_INSERT_ROWS ?? 25);
const INSERTS = Number(process.env.BENCH_INSERTS ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const dir = process.env.BENCH_DIR ? fs.mkdtempSync(path.join(process.env.BENCH_DIR, 'settle-chdb-insert-')) : chdbBenchDir('settle-chdb-insert-');
// The connection hook is typed against @clickhouse/client-common's Connection; the two packages pin it separately.
const client = createClient({ connection: createChdbConnection({ path: dir }), log: { level: ClickHouseLogLevel.OFF } } as Parameters<typeof createClient>[0]);
const store = new ReportingStore(client, 'bench', true);
await store.ensureSchema();
const feedText = `org_id String, environment String, id String, type String, created_at DateTime64(6, 'UTC'), modified_at DateTime64(6, 'UTC'), version UInt64, is_deleted UInt8, data String`;
await store.command(`CREATE TABLE bench.text (${feedText}) ENGINE = MergeTree ORDER BY (org_id, environment, created_at, id)`);
await store.command(`CREATE TABLE bench.nothing (${feedText}) ENGINE = Null`);

let made = 0;
/** Feed lines as Postgres sends them (reporting/columns.ts pgRowJson). */
function feedLines(): string[] {
  return Array.from({ length: ROWS }, () => {
    made += 1;
    const at = `2026-11-28 10:${String(made % 60).padStart(2, '0')}:00.123456`;
    const data = { amount: String(100 + made), currency: 'usd', status: 'settled', description: `order "${made}"\nné`, sender: { account_id: 'acct_1', method_id: null }, fee: '30', attrs: { channel: 'web' } };
    return JSON.stringify(['org_bench', 'live', `txn_${made}`, 'payment', at, at, 1, 0, data]);
  });
}

/** The derived columns, in the order a pass sends them (FEED_COLUMNS.derived, attrs last). */
const DERIVED = FEED_COLUMNS.derived.slice(8, -1).map((name) => MIRROR_COLUMNS.find((c) => c.name === name)!);

/** The same rows as a pass sends them: the derived columns' values after the row's own. */
function derivedLines(): string[] {
  return feedLines().map((line) => {
    const [org, env, id, type, created, modified, version, deleted, data] = JSON.parse(line);
    const derived = DERIVED.map((c) => {
      const value = c.field!.store.split('.').reduce((node, key) => node?.[key], data) ?? null;
      return c.field!.type === 'money' && value !== null ? Number(value) : value;
    });
    return JSON.stringify([org, env, id, type, created, modified, version, deleted, ...derived, data.attrs]);
  });
}

const targets: Array<[string, () => Promise<void>]> = [
  ['mirror table (the pass)', () => store.insertLines(derivedLines(), store.table, 'derived')],
  ['documents (the rebuild)', () => store.insertLines(feedLines())],
  ['nine text columns', () => store.insertLines(feedLines(), 'bench.text')],
  ['Null table', () => store.insertLines(feedLines(), 'bench.nothing')],
];

console.log(`chdb insert: ${ROWS} rows an insert, ${INSERTS} inserts a round, load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
for (let round = 1; round <= ROUNDS; round += 1) {
  for (const [name, insert] of targets) {
    for (let i = 0; i < 5; i += 1) await insert();
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < INSERTS; i += 1) await insert();
    const used = process.cpuUsage(cpu);
    const wall = performance.now() - started;
    console.log(`round ${round}  ${name.padEnd(24)} ${((used.user + used.system) / 1000 / INSERTS).toFixed(2).padStart(6)} CPU ms an insert, ${(wall / INSERTS).toFixed(2).padStart(6)} ms wall`);
  }
}
console.log(`load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
await store.close();
fs.rmSync(dir, { recursive: true, force: true });
