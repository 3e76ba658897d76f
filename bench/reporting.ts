/**
 * `npm run bench:reporting`: the reporting process on one generated data set (BENCH_ROWS
 * transactions, default 1,000,000; 90 % in the benchmark tenant, the rest spread over others).
 *
 *   (b) backfill: the first catch-up of a new reporting process, and `settle reporting rebuild`
 *       (POST /rebuild), in rows/s. Target ≥ 100,000 rows/s.
 *   (c) queries through the API: a group-by with all seven aggregates over the tenant's whole
 *       set, and a tenant-by-month group-by, answered by ClickHouse (web → reporting) beside the
 *       same queries compiled for Postgres (a second web process with REPORTING_URL=off), on the
 *       same data. Target: ClickHouse ≥ 10× faster at 1M rows; < 500 ms at 10M.
 *   (a) mirror lag, commit → visible (the reporting position covers the writing transaction),
 *       while transactions commit at BENCH_LAG_RATE per second (default 1,000), BENCH_LAG_BATCH
 *       per database commit (default 10), for BENCH_LAG_SECONDS (default 20). Target p99 < 1 s;
 *       published CDC anchors: PeerDB about 10 s, ClickPipes' default sync interval 60 s.
 *
 * Postgres: DATABASE_URL when set, else an embedded server in a temp dir (as `npm test`). A fresh
 * database is created and dropped afterwards; ClickHouse is the embedded chdb in a temp dir.
 * Results: the tables on stdout, JSON in bench/results/reporting.json.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { projectRoot } from '../api/config.ts';
import { createDb, rows } from '../api/db/connection.ts';
import { freePort, startEmbeddedPostgres } from '../api/db/embedded.ts';
import { migrate } from '../api/db/migrate.ts';
import { createKey } from '../api/keys.ts';
import { covers, parseSnapshot, type Snapshot } from '../reporting/feed.ts';

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

const ROWS = positive('BENCH_ROWS', 1_000_000);
const LAG_RATE = positive('BENCH_LAG_RATE', 1000);
const LAG_SECONDS = positive('BENCH_LAG_SECONDS', 20);
/** transactions per commit in the lag run (the API's bulk create commits many at once too) */
const LAG_BATCH = positive('BENCH_LAG_BATCH', 10);
const QUERY_RUNS = positive('BENCH_QUERY_RUNS', 5);
const CHUNK = 50_000;
const TARGETS = { backfillRowsPerSec: 100_000, speedupAt1M: 10, msAt10M: 500, lagP99Ms: 1000 };

// ---- cleanup, in reverse order of setup, also on Ctrl-C ------------------------------------
const cleanups: Array<() => Promise<void>> = [];
let cleaning: Promise<void> | null = null;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const step of cleanups.reverse()) {
      try {
        await step();
      } catch (error) {
        console.error('cleanup:', (error as Error).message);
      }
    }
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`${signal}: cleaning up`);
    cleanup().finally(() => process.exit(130));
  });
}

function log(message: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

function startChild(name: string, script: string, env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, [path.join(projectRoot, script)], { cwd: projectRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code, signal) => {
    if (!cleaning) console.error(`${name} exited unexpectedly (code ${code}, signal ${signal})`);
  });
  cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  });
  return child;
}

async function waitFor<T>(what: string, read: () => Promise<T | null>, ms: number, every = 100): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read().catch(() => null);
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}

// ---- Postgres and data -------------------------------------------------------------------------
let serverUrl = process.env.DATABASE_URL;
if (!serverUrl) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-bench-pg-'));
  fs.chmodSync(dir, 0o755);
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const embedded = await startEmbeddedPostgres(dir, { persistent: false });
  cleanups.push(() => embedded.stop());
  serverUrl = embedded.url('postgres');
}
const adminUrl = serverUrl;
async function admin(sql: string): Promise<void> {
  const client = new pg.Client(adminUrl);
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
const database = `settle_bench_${process.pid}_${Date.now().toString(36)}`;
await admin(`create database ${database}`);
cleanups.push(() => admin(`drop database if exists ${database} with (force)`));
const databaseUrlObject = new URL(serverUrl);
databaseUrlObject.pathname = `/${database}`;
const databaseUrl = databaseUrlObject.toString();
await migrate(databaseUrl);
const db = createDb(databaseUrl, 4);
cleanups.push(() => db.destroy());
const key = await createKey(db, 'bench', 'test');

/**
 * Generated in Postgres itself, chunk by chunk: amounts 1.00–10,000.00, six statuses, five types,
 * two currencies, attrs region/tier, card brands, two years of timestamps; every tenth row belongs
 * to one of seven other orgs.
 */
async function generate(from: number, to: number): Promise<void> {
  await rows(db, `
    insert into transactions (id, org_id, environment, type, data, created_at, modified_at)
    select 'txn_bench' || lpad(g::text, 12, '0'),
           case when g % 10 = 0 then 'org_other_' || (g % 7) else ? end,
           'test',
           (array['payment','payment','payment','refund','payout','deposit','withdraw'])[1 + abs(h) % 7],
           jsonb_build_object(
             'amount', 100 + abs(h2) % 1000000,
             'currency', case when h % 5 = 0 then 'CAD' else 'USD' end,
             'status', (array['processed','processed','processed','authorized','voided','declined','rejected','processing'])[1 + abs(h2 >> 8) % 8],
             'status_code', 'approved',
             'payment_method_type', case when h % 3 = 0 then 'bank_account' else 'card' end,
             'card_brand', (array['visa','mastercard','amex'])[1 + abs(h >> 4) % 3],
             'customer_id', 'acct_c' || (abs(h >> 6) % 5000),
             'attrs', jsonb_build_object('region', (array['eu','us','apac'])[1 + abs(h >> 10) % 3], 'tier', (array['gold','silver','bronze'])[1 + abs(h2 >> 12) % 3])),
           at, at
      from generate_series(?::bigint, ?::bigint) g,
           lateral (select hashint8(g) as h, hashint8(g + 1000000007) as h2,
                           timestamptz '2024-01-01 00:00:00+00' + ((abs(hashint8(g + 7)) % (730 * 86400)) * interval '1 second') + ((g % 1000000) * interval '1 microsecond') as at) r`,
  [key.orgId, from, to]);
}

log(`generating ${ROWS.toLocaleString('en')} transactions in Postgres`);
const generateStarted = performance.now();
for (let from = 1; from <= ROWS; from += CHUNK) {
  await generate(from, Math.min(ROWS, from + CHUNK - 1));
  if ((from - 1) % (CHUNK * 10) === 0) log(`  ${Math.min(ROWS, from + CHUNK - 1).toLocaleString('en')} rows`);
}
await rows(db, 'vacuum analyze transactions');
await rows(db, 'vacuum analyze reporting_changes');
const generateSeconds = (performance.now() - generateStarted) / 1000;
const [{ tenantRows }] = await rows<{ tenantRows: number }>(db, 'select count(*)::int as "tenantRows" from transactions where org_id = ?', [key.orgId]);
log(`generated in ${generateSeconds.toFixed(1)} s; ${tenantRows.toLocaleString('en')} rows in the benchmark tenant`);

async function positionNow(): Promise<Snapshot> {
  const [row] = await rows<{ p: string }>(db, 'select pg_current_snapshot()::text as p');
  return parseSnapshot(row.p)!;
}

// ---- (b) backfill --------------------------------------------------------------------------------
const chDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-bench-ch-'));
cleanups.push(async () => fs.rmSync(chDir, { recursive: true, force: true }));
const reportingPort = await freePort();
const reportingUrl = `http://127.0.0.1:${reportingPort}`;
const target = await positionNow();
const syncStarted = performance.now();
startChild('reporting', 'reporting/main.ts', { DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: chDir, REPORTING_PORT: String(reportingPort), LOG_LEVEL: 'warn' });

interface Health { role?: string; position?: string; lag_ms?: number }
async function health(): Promise<Health> {
  const res = await fetch(`${reportingUrl}/healthz`);
  return await res.json() as Health;
}
await waitFor('the first catch-up', async () => {
  const h = await health();
  const position = h.position ? parseSnapshot(h.position) : null;
  return h.role === 'leader' && position && covers(position, target) ? h : null;
}, 30 * 60_000, 50);
const syncSeconds = (performance.now() - syncStarted) / 1000;
log(`initial catch-up (process start included): ${ROWS.toLocaleString('en')} rows in ${syncSeconds.toFixed(1)} s`);

const rebuildStarted = performance.now();
const rebuildResponse = await fetch(`${reportingUrl}/rebuild`, { method: 'POST' });
const rebuildLines = (await rebuildResponse.text()).trim().split('\n').map((line) => JSON.parse(line) as { done: number; copyMs?: number; mergeMs?: number; finished?: boolean; error?: string });
const rebuildSeconds = (performance.now() - rebuildStarted) / 1000;
const rebuilt = rebuildLines.at(-1)!;
if (!rebuilt.finished) throw new Error(`rebuild failed: ${JSON.stringify(rebuilt)}`);
log(`rebuild: ${rebuilt.done.toLocaleString('en')} rows in ${rebuildSeconds.toFixed(1)} s`);
const backfill = {
  rows: rebuilt.done,
  initialCatchUpSeconds: round(syncSeconds, 2),
  initialCatchUpRowsPerSec: Math.round(ROWS / syncSeconds),
  rebuildSeconds: round(rebuildSeconds, 2),
  rebuildRowsPerSec: Math.round(rebuilt.done / rebuildSeconds),
  rebuildCopySeconds: round((rebuilt.copyMs ?? 0) / 1000, 2),
  rebuildCopyRowsPerSec: Math.round(rebuilt.done / ((rebuilt.copyMs ?? 1) / 1000)),
  rebuildMergeSeconds: round((rebuilt.mergeMs ?? 0) / 1000, 2),
};

// ---- (c) queries through the API ----------------------------------------------------------------
const clickhouseWebPort = await freePort();
const postgresWebPort = await freePort();
const webEnv = { DATABASE_URL: databaseUrl, HOST: '127.0.0.1', LOG_LEVEL: 'warn', SETTLE_RATE_LIMIT: 'off', REPORTING_WAIT: '30000' };
startChild('web (ClickHouse path)', 'api/server.ts', { ...webEnv, PORT: String(clickhouseWebPort), REPORTING_URL: reportingUrl });
startChild('web (Postgres path)', 'api/server.ts', { ...webEnv, PORT: String(postgresWebPort), REPORTING_URL: 'off' });
const webs = { clickhouse: `http://127.0.0.1:${clickhouseWebPort}`, postgres: `http://127.0.0.1:${postgresWebPort}` } as const;
for (const url of Object.values(webs)) await waitFor(url, async () => ((await fetch(`${url}/healthz`)).ok ? true : null), 30_000);
const headers = { Authorization: `Basic ${Buffer.from(`${key.secret}:`).toString('base64')}` };

const QUERIES = [
  { name: 'seven aggregates by type', query: 'fields=type,count,sum(amount),avg(amount),min(amount),max(amount),stddev(amount),variance(amount)&group_by=type' },
  { name: 'tenant by month', query: 'fields=year(created_at),month(created_at),count,sum(amount)&group_by=year(created_at),month(created_at)&order_by[0]=year(created_at)&order_by[1]=month(created_at)' },
];

async function timed(url: string): Promise<{ ms: number; values: unknown[] }> {
  const started = performance.now();
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(600_000) });
  const body = await res.json() as { values?: unknown[] };
  const ms = performance.now() - started;
  if (res.status !== 200 || !body.values) throw new Error(`${url}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  return { ms, values: body.values };
}

function canonical(values: unknown[]): string {
  // Postgres returns numeric group keys and averages as its own text; compare rounded numbers.
  return JSON.stringify(values.map((row) => Object.fromEntries(Object.entries(row as Record<string, unknown>).map(([k, v]) => {
    const n = typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
    return [k, typeof n === 'number' ? Number(n.toPrecision(10)) : n];
  }))).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))));
}

const queryResults = [];
for (const { name, query } of QUERIES) {
  const runs: Record<'clickhouse' | 'postgres', number[]> = { clickhouse: [], postgres: [] };
  const answers: Record<string, string> = {};
  for (const path of ['clickhouse', 'postgres'] as const) {
    const warm = await timed(`${webs[path]}/transactions?${query}`);
    answers[path] = canonical(warm.values);
  }
  for (let i = 0; i < QUERY_RUNS; i += 1) {
    for (const path of ['clickhouse', 'postgres'] as const) runs[path].push((await timed(`${webs[path]}/transactions?${query}`)).ms);
  }
  const ch = median(runs.clickhouse);
  const pgMs = median(runs.postgres);
  queryResults.push({
    name,
    query,
    clickhouseMedianMs: round(ch, 1),
    clickhouseMinMs: round(Math.min(...runs.clickhouse), 1),
    postgresMedianMs: round(pgMs, 1),
    postgresMinMs: round(Math.min(...runs.postgres), 1),
    speedup: round(pgMs / ch, 1),
    sameAnswer: answers.clickhouse === answers.postgres,
  });
  log(`${name}: ClickHouse ${ch.toFixed(0)} ms, Postgres ${pgMs.toFixed(0)} ms (${(pgMs / ch).toFixed(1)}×), same answer: ${answers.clickhouse === answers.postgres}`);
}

// ---- (a) mirror lag under a steady write rate -----------------------------------------------------
log(`mirror lag: ${LAG_RATE} transactions/s in commits of ${LAG_BATCH} for ${LAG_SECONDS} s`);
const writer = new pg.Pool({ connectionString: databaseUrl, max: 24 });
cleanups.push(() => writer.end());
const pending = new Map<string, number>();
const lags: number[] = [];
let committed = 0;
let failed = 0;
let writing = true;
let seq = 0;

async function observe(): Promise<void> {
  while (writing || pending.size > 0) {
    const h = await health().catch(() => null);
    const now = performance.now();
    const position = h?.position ? parseSnapshot(h.position) : null;
    if (position) {
      const open = new Set(position.xip);
      for (const [txid, at] of pending) {
        const id = BigInt(txid);
        if (id < position.xmax && !open.has(id)) {
          lags.push(now - at);
          pending.delete(txid);
        }
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
const observer = observe();

const lagStarted = performance.now();
const inFlight = new Set<Promise<void>>();
while (performance.now() - lagStarted < LAG_SECONDS * 1000) {
  const due = Math.floor(((performance.now() - lagStarted) / 1000) * LAG_RATE / LAG_BATCH);
  while (seq < due && inFlight.size < 64) {
    const n = seq++;
    const write = writer.query<{ txid: string }>(
      `insert into transactions (id, org_id, environment, type, data)
       select 'txn_lag' || lpad(($1::bigint * 1000 + g)::text, 12, '0'), $2, 'test', 'payment',
              jsonb_build_object('amount', 100 + g, 'status', 'processed', 'attrs', jsonb_build_object('region', 'eu'))
         from generate_series(1, $3::int) g
       returning pg_current_xact_id()::text as txid`,
      [n, key.orgId, LAG_BATCH],
    ).then((result) => {
      const at = performance.now();
      pending.set(result.rows[0].txid, at);
      committed += result.rows.length;
    }, () => {
      failed += 1;
    });
    inFlight.add(write);
    void write.finally(() => inFlight.delete(write));
  }
  await new Promise((resolve) => setTimeout(resolve, 1));
}
await Promise.all(inFlight);
const writeSeconds = (performance.now() - lagStarted) / 1000;
writing = false;
const drainDeadline = Date.now() + 30_000;
while (pending.size > 0 && Date.now() < drainDeadline) await new Promise((resolve) => setTimeout(resolve, 20));
const unseen = pending.size;
pending.clear();
await observer;
lags.sort((a, b) => a - b);
const lag = {
  targetRate: LAG_RATE,
  perCommit: LAG_BATCH,
  achievedRate: Math.round(committed / writeSeconds),
  transactions: committed,
  failedWrites: failed,
  unseenAfter30s: unseen,
  p50Ms: round(percentile(lags, 0.5), 1),
  p99Ms: round(percentile(lags, 0.99), 1),
  maxMs: round(lags.at(-1) ?? 0, 1),
};
log(`lag p50 ${lag.p50Ms} ms, p99 ${lag.p99Ms} ms at ${lag.achievedRate} tx/s`);

// ---- report ---------------------------------------------------------------------------------------
function median(values: number[]): number {
  return percentile([...values].sort((a, b) => a - b), 0.5);
}
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}
function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
function table(head: string[], body: Array<Array<string | number>>): string {
  const cells = [head, ...body.map((r) => r.map(String))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}
const pass = (ok: boolean) => (ok ? 'PASS' : 'MISS');
const large = ROWS >= 10_000_000;

console.log(`\nreporting: ${ROWS.toLocaleString('en')} transactions (${tenantRows.toLocaleString('en')} in the queried tenant), Node ${process.version}, ${os.cpus().length} CPUs, embedded chdb\n`);
console.log(table(['(b) backfill', 'rows', 'seconds', 'rows/s', `target ≥ ${TARGETS.backfillRowsPerSec.toLocaleString('en')}/s`], [
  ['initial catch-up (new process)', backfill.rows, backfill.initialCatchUpSeconds, backfill.initialCatchUpRowsPerSec.toLocaleString('en'), pass(backfill.initialCatchUpRowsPerSec >= TARGETS.backfillRowsPerSec)],
  ['settle reporting rebuild', backfill.rows, backfill.rebuildSeconds, backfill.rebuildRowsPerSec.toLocaleString('en'), pass(backfill.rebuildRowsPerSec >= TARGETS.backfillRowsPerSec)],
  ['  of which copying', backfill.rows, backfill.rebuildCopySeconds, backfill.rebuildCopyRowsPerSec.toLocaleString('en'), pass(backfill.rebuildCopyRowsPerSec >= TARGETS.backfillRowsPerSec)],
  ['  of which merging parts (OPTIMIZE FINAL)', '', backfill.rebuildMergeSeconds, '', ''],
]));
console.log('');
console.log(table(['(c) through the API', 'ClickHouse ms (median/min)', 'Postgres ms (median/min)', 'speed-up', 'same answer', large ? `target < ${TARGETS.msAt10M} ms` : `target ≥ ${TARGETS.speedupAt1M}×`],
  queryResults.map((q) => [q.name, `${q.clickhouseMedianMs} / ${q.clickhouseMinMs}`, `${q.postgresMedianMs} / ${q.postgresMinMs}`, `${q.speedup}×`, q.sameAnswer ? 'yes' : 'NO',
    large ? pass(q.clickhouseMedianMs < TARGETS.msAt10M) : pass(q.speedup >= TARGETS.speedupAt1M)])));
console.log('');
console.log(table(['(a) mirror lag, commit → visible', 'tx/s', 'p50 ms', 'p99 ms', 'max ms', `target p99 < ${TARGETS.lagP99Ms} ms`], [
  [`${lag.transactions.toLocaleString('en')} transactions, ${LAG_BATCH} per commit`, lag.achievedRate, lag.p50Ms, lag.p99Ms, lag.maxMs, pass(lag.p99Ms < TARGETS.lagP99Ms && lag.unseenAfter30s === 0)],
]));
console.log('\nanchors for (a): PeerDB ≈ 10 s replication lag, ClickPipes default sync interval 60 s');

const resultsDir = path.join(projectRoot, 'bench/results');
fs.mkdirSync(resultsDir, { recursive: true });
const resultsFile = path.join(resultsDir, ROWS === 1_000_000 ? 'reporting.json' : `reporting-${ROWS}.json`);
fs.writeFileSync(resultsFile, `${JSON.stringify({
  benchmark: 'reporting',
  date: new Date().toISOString(),
  node: process.version,
  cpus: os.cpus().length,
  rows: ROWS,
  tenantRows,
  generateSeconds: round(generateSeconds, 1),
  targets: TARGETS,
  backfill,
  queries: queryResults,
  lag,
  anchors: { lag: 'PeerDB ≈ 10 s; ClickPipes default sync interval 60 s' },
}, null, 2)}\n`);
console.log(`\nresults: ${path.relative(projectRoot, resultsFile)}`);

await cleanup();
process.exit(0);
