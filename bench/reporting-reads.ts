/**
 * `npm run bench:reporting-reads`: what a reader's query costs embedded chdb, as the reporting
 * process sends it, beside the same statement read through ClickHouse's defaults (its reader pool,
 * `pread_threadpool`, and as many threads as cores): the anchor. BENCH_ROWS transactions (default
 * 1,000,000) over two years, 90 % of them one tenant's, loaded in chunks of 100,000 and merged,
 * then BENCH_TODAY_INSERTS inserts (default 300) of 30 of today's, as passes write them; today is
 * the day a reader of its own writes finds not rolled up yet. Each query runs BENCH_RUNS times
 * (default 20) a round after 3 unmeasured, the two forms alternated over BENCH_ROUNDS rounds
 * (default 3): CPU ms a query (process.cpuUsage: Node and every chdb thread) and ms wall, the
 * round's mean. Then the rollup's refresh: 5,000 new transactions added to their groups, and
 * today's day aggregated again (no anchor: the store writes those statements itself).
 * BENCH_CH_DIR chooses where chdb keeps its data (bench/chdbDir.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import { loadConfig } from '../api/config.ts';
import type { Version } from '../api/engine/family.ts';
import { parseListQuery } from '../api/query/listQuery.ts';
import { READ_SETTINGS } from '../reporting/columns.ts';
import { compileReport } from '../reporting/report.ts';
import { openStore } from '../reporting/store.ts';
import { chdbBenchDir } from './chdbDir.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const TODAY_INSERTS = Number(process.env.BENCH_TODAY_INSERTS ?? 300);
const RUNS = Number(process.env.BENCH_RUNS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CHUNK = 100_000;
const TENANT = { orgId: 'org_bench', environment: 'test' as const };

// The reporting process's own store: embedded chdb, its three connections and spool, in a fresh directory.
const dir = chdbBenchDir('settle-bench-reads-');
const store = openStore(loadConfig({ SETTLE_DATA_DIR: dir, LOG_LEVEL: 'silent' }));
await store.ensureSchema();

const TYPES = ['payment', 'refund', 'payment', 'payment', 'credit'];
const STATUSES = ['processed', 'authorized', 'declined', 'voided', 'processing', 'rejected'];
let made = 0;
/** One feed line (the `data` shape, as a rebuild sends it): every tenth row another tenant's. */
function feedLine(at: Date, id = `txn_${String(made + 1).padStart(12, '0')}`): string {
  made += 1;
  const time = at.toISOString().replace('T', ' ').replace('Z', '');
  const data = { amount: String(100 + (made * 7919) % 1_000_000), currency: made % 2 ? 'usd' : 'cad', status: STATUSES[made % 6], description: `order ${made}`, attrs: { region: made % 3 ? 'eu' : 'us' } };
  const org = made % 10 === 0 ? `org_other${made % 7}` : TENANT.orgId;
  return JSON.stringify([org, TENANT.environment, id, TYPES[made % 5], time, time, 1, 0, data]);
}

const today = new Date().toISOString().slice(0, 10);
const twoYears = 730 * 86_400_000;
const start = Date.parse(`${today}T00:00:00Z`) - twoYears;
const loaded = performance.now();
for (let chunk = 0; chunk * CHUNK < ROWS; chunk += 1) {
  const lines: string[] = [];
  for (let i = chunk * CHUNK; i < Math.min(ROWS, (chunk + 1) * CHUNK); i += 1) lines.push(feedLine(new Date(start + (i / ROWS) * twoYears)));
  await store.insertLines(lines);
}
await store.command(`OPTIMIZE TABLE ${store.table} FINAL`);
await store.fillRollup();
const flowFrom = Date.now() - 60_000;
for (let i = 0; i < TODAY_INSERTS; i += 1) {
  await store.insertLines(Array.from({ length: 30 }, (_, j) => feedLine(new Date(flowFrom + i * 30 + j))));
}
const [parts] = await store.select<{ parts: string }>(`SELECT toString(count()) AS parts FROM system.parts WHERE active AND database = {database:String} AND table = 'transactions'`, { database: store.database });
const transactions = made;
console.log(`${transactions.toLocaleString('en')} transactions in ${((performance.now() - loaded) / 1000).toFixed(1)} s, ${parts.parts} parts; load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);

/** The statement as ClickHouse's defaults would read it: the reporting process's read settings taken out. */
function withDefaults(sql: string): string {
  return sql.replace(`, ${READ_SETTINGS}`, '').replace(', max_threads = 1', '');
}

async function measure(sql: string, params: Record<string, unknown>): Promise<{ cpuMs: number; wallMs: number }> {
  for (let i = 0; i < 3; i += 1) await store.select(sql, params);
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < RUNS; i += 1) await store.select(sql, params);
  const used = process.cpuUsage(cpu);
  return { cpuMs: (used.user + used.system) / 1000 / RUNS, wallMs: (performance.now() - started) / RUNS };
}

const QUERIES: Array<{ name: string; params: string; trailing: string[] }> = [
  { name: "a reader's count, today trailing", params: 'fields=count', trailing: [today] },
  { name: 'seven aggregates by type, today trailing', params: 'fields=type,count,sum(amount),avg(amount),min(amount),max(amount),stddev(amount),variance(amount)&group_by=type', trailing: [today] },
  { name: 'count, every day rolled up (months)', params: 'fields=count', trailing: [] },
  { name: 'by attrs[region], the whole mirror', params: 'fields=attrs[region],count,sum(amount)&group_by=attrs[region]', trailing: [] },
];

const rows: string[][] = [];
for (const query of QUERIES) {
  const request = { tenant: TENANT, version: 'v1' as Version, query: parseListQuery([...new URLSearchParams(query.params)]) };
  const compiled = compileReport(request, store.table, undefined, query.trailing);
  const defaults = withDefaults(compiled.sql);
  const answers = [JSON.stringify(await store.select(compiled.sql, compiled.params)), JSON.stringify(await store.select(defaults, compiled.params))];
  if (answers[0] !== answers[1]) throw new Error(`${query.name}: the two forms answer differently`);
  const ours: Array<{ cpuMs: number; wallMs: number }> = [];
  const anchor: Array<{ cpuMs: number; wallMs: number }> = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    ours.push(await measure(compiled.sql, compiled.params));
    anchor.push(await measure(defaults, compiled.params));
  }
  const show = (runs: Array<{ cpuMs: number; wallMs: number }>) => runs.map((r) => `${r.cpuMs.toFixed(1)} (${r.wallMs.toFixed(1)})`).join(' / ');
  rows.push([query.name, compiled.grain ?? 'mirror', show(ours), show(anchor)]);
  console.log(`${query.name}: ${show(ours)} CPU ms (wall ms) a query, against ${show(anchor)} with ClickHouse's defaults`);
}

/** Refreshes after noting today changed as `fresh` (5,000 new transactions) or not (aggregated again): ms wall and CPU ms. */
async function refresh(fresh: boolean): Promise<string> {
  const ids: string[] = [];
  const from = new Date(Date.now() - 30_000);
  const lines: string[] = [];
  for (let i = 0; i < 5000; i += 1) {
    const id = `txn_fresh_${made + 1}`;
    ids.push(id);
    lines.push(feedLine(new Date(from.getTime() + i), id));
    if (lines.length === 30) await store.insertLines(lines.splice(0));
  }
  await store.insertLines(lines);
  const text = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
  store.noteChangedDays([{ ...TENANT, day: today, fresh: fresh ? { ids, from: text(from.getTime()), to: text(from.getTime() + 4999) } : null }]);
  const cpu = process.cpuUsage();
  const started = performance.now();
  await store.refreshRollup();
  const used = process.cpuUsage(cpu);
  return `${(performance.now() - started).toFixed(0)} ms (${((used.user + used.system) / 1000).toFixed(0)} CPU ms)`;
}
// A first refresh after opening aggregates every day it takes again; new transactions are added after it.
store.noteChangedDays([{ ...TENANT, day: today, fresh: null }]);
await store.refreshRollup();
const refreshes = { added: [] as string[], again: [] as string[] };
for (let round = 0; round < ROUNDS; round += 1) {
  refreshes.added.push(await refresh(true));
  refreshes.again.push(await refresh(false));
}
console.log(`the rollup's refresh: 5,000 new transactions added ${refreshes.added.join(' / ')}; today aggregated again ${refreshes.again.join(' / ')}`);

console.log(`\n| query, ${transactions.toLocaleString('en')} transactions | reads | CPU ms (wall ms) a query, each round | with ClickHouse's defaults (anchor) |\n|---|---|---|---|`);
for (const row of rows) console.log(`| ${row.join(' | ')} |`);
console.log(`load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
await store.close();
fs.rmSync(dir, { recursive: true, force: true });
