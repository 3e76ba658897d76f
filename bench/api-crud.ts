/**
 * `npm run bench:api-crud`: Settle's create-customer and get-by-id throughput and latency next to
 * an anchor (bench/anchor-server.ts: a bare Koa app doing one INSERT / one SELECT by primary key on
 * the same table with a pg.Pool of Settle's default size).
 *
 * Postgres as in `npm test`: DATABASE_URL when set, else an embedded server in a temp dir. A fresh
 * database is created, migrated and dropped afterwards. Settle's web process and the anchor each
 * run in a child process, so neither shares an event loop with the load generator (autocannon).
 *
 * Env: BENCH_SECONDS (per scenario and server, default 10), BENCH_WARMUP_SECONDS (default 2),
 * BENCH_CONNECTIONS (default 32). Results: the table on stdout, JSON in bench/results/api-crud.json.
 */
// @ts-ignore -- autocannon ships no type declarations
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { projectRoot } from '../api/config.ts';
import { createDb } from '../api/db/connection.ts';
import { freePort, startEmbeddedPostgres, type EmbeddedServer } from '../api/db/embedded.ts';
import { migrate } from '../api/db/migrate.ts';
import { createKey } from '../api/keys.ts';

const SECONDS = positive('BENCH_SECONDS', 10);
const WARMUP_SECONDS = positive('BENCH_WARMUP_SECONDS', 2, true);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 32);
const GET_IDS = 16;
const TARGET_RATIO = 0.6;
const TARGET_P99_MS = 50;

function positive(name: string, fallback: number, zeroOk = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (!zeroOk && value === 0)) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function admin(url: string, sql: string): Promise<void> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

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

function startChild(name: string, script: string, env: Record<string, string>): ChildProcess {
  // BENCH_PROFILE=1 writes a V8 CPU profile of each server into bench/results/profiles.
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', path.join(projectRoot, 'bench/results/profiles')] : [];
  const child = spawn(process.execPath, [...profile, path.join(projectRoot, script)], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code, signal) => {
    if (!cleaning) console.error(`${name} exited unexpectedly (code ${code}, signal ${signal})`);
  });
  cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  });
  return child;
}

async function waitForHttp(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${url}: the process exited with code ${child.exitCode}`);
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`${url} did not answer within 30 s`);
}

// ---- setup -----------------------------------------------------------------------------------
let serverUrl = process.env.DATABASE_URL;
let embedded: EmbeddedServer | null = null;
if (!serverUrl) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-bench-pg-'));
  // As root, the server runs as a `postgres` user that must be able to enter this directory.
  fs.chmodSync(dir, 0o755);
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  embedded = await startEmbeddedPostgres(dir, { persistent: false });
  const server = embedded;
  cleanups.push(() => server.stop());
  serverUrl = embedded.url('postgres');
}
const adminUrl = serverUrl;
const database = `settle_bench_${process.pid}_${Date.now().toString(36)}`;
await admin(adminUrl, `create database ${database}`);
cleanups.push(() => admin(adminUrl, `drop database if exists ${database} with (force)`));
const databaseUrl = withDatabase(serverUrl, database);
await migrate(databaseUrl);

const db = createDb(databaseUrl, 2);
const key = await createKey(db, 'bench', 'test');
await db.destroy();

const settlePort = await freePort();
const anchorPort = await freePort();
const settle = startChild('settle web', 'api/server.ts', {
  DATABASE_URL: databaseUrl,
  PORT: String(settlePort),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  SETTLE_RATE_LIMIT: 'off',
});
const anchor = startChild('anchor', 'bench/anchor-server.ts', {
  DATABASE_URL: databaseUrl,
  PORT: String(anchorPort),
  ANCHOR_ORG_ID: key.orgId,
  ANCHOR_POOL: '10',
});
const servers = { settle: `http://127.0.0.1:${settlePort}`, anchor: `http://127.0.0.1:${anchorPort}` } as const;
type ServerName = keyof typeof servers;
await waitForHttp(`${servers.settle}/healthz`, settle);
await waitForHttp(`${servers.anchor}/customers/none`, anchor);

const headers = {
  Authorization: `Basic ${Buffer.from(`${key.secret}:`).toString('base64')}`,
  'Content-Type': 'application/json',
};
const customerBody = JSON.stringify({ name: 'Bench Customer', email: 'bench@example.com' });

// Ids for get-by-id, made through Settle (same org and environment, so both servers can read them).
const ids: string[] = [];
for (let i = 0; i < GET_IDS; i += 1) {
  const response = await fetch(`${servers.settle}/customers`, { method: 'POST', headers, body: JSON.stringify({ name: `Get ${i}`, email: `get${i}@example.com` }) });
  const body = (await response.json()) as { id?: string };
  if (response.status !== 200 || !body.id) throw new Error(`setup create failed: ${response.status} ${JSON.stringify(body)}`);
  ids.push(body.id);
}
for (const name of Object.keys(servers) as ServerName[]) {
  const response = await fetch(`${servers[name]}/customers/${ids[0]}`, { headers });
  if (response.status !== 200) throw new Error(`${name}: GET /customers/${ids[0]} answered ${response.status}`);
}

// ---- scenarios -------------------------------------------------------------------------------
interface Scenario {
  name: string;
  /** autocannon takes the path from the url (it has no top-level `path` option) */
  path: string;
  options: Record<string, unknown>;
}
const scenarios: Scenario[] = [
  { name: 'create-customer', path: '/customers', options: { method: 'POST', headers, body: customerBody } },
  // Each connection cycles through the ids.
  { name: 'get-by-id', path: '', options: { requests: ids.map((id) => ({ method: 'GET', path: `/customers/${id}`, headers })) } },
];

interface Measurement {
  scenario: string;
  server: ServerName;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
}

async function run(url: string, options: Record<string, unknown>, seconds: number): Promise<any> {
  return await autocannon({ url, connections: CONNECTIONS, duration: seconds, timeout: 10, ...options });
}

const measurements: Measurement[] = [];
for (const scenario of scenarios) {
  for (const server of Object.keys(servers) as ServerName[]) {
    process.stderr.write(`${scenario.name} on ${server}: `);
    const url = servers[server] + scenario.path;
    if (WARMUP_SECONDS > 0) await run(url, scenario.options, WARMUP_SECONDS);
    const result = await run(url, scenario.options, SECONDS);
    const measurement: Measurement = {
      scenario: scenario.name,
      server,
      reqPerSec: result.requests.average,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      requests: result.requests.total,
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
    };
    measurements.push(measurement);
    process.stderr.write(`${measurement.reqPerSec.toFixed(0)} req/s\n`);
    if (measurement.non2xx || measurement.errors) {
      console.error(`  warning: ${measurement.non2xx} non-2xx responses, ${measurement.errors} errors (${measurement.timeouts} timeouts)`);
    }
  }
}

// ---- report ----------------------------------------------------------------------------------
interface Summary {
  scenario: string;
  settleReqPerSec: number;
  anchorReqPerSec: number;
  percentOfAnchor: number;
  settleP99Ms: number;
  throughputTarget: 'PASS' | 'MISS';
  p99Target: 'PASS' | 'MISS';
}
const summaries: Summary[] = scenarios.map(({ name }) => {
  const s = measurements.find((m) => m.scenario === name && m.server === 'settle')!;
  const a = measurements.find((m) => m.scenario === name && m.server === 'anchor')!;
  const ratio = a.reqPerSec > 0 ? s.reqPerSec / a.reqPerSec : 0;
  const clean = s.non2xx === 0 && s.errors === 0;
  return {
    scenario: name,
    settleReqPerSec: s.reqPerSec,
    anchorReqPerSec: a.reqPerSec,
    percentOfAnchor: Math.round(ratio * 1000) / 10,
    settleP99Ms: s.p99Ms,
    throughputTarget: clean && ratio >= TARGET_RATIO ? 'PASS' : 'MISS',
    p99Target: clean && s.p99Ms < TARGET_P99_MS ? 'PASS' : 'MISS',
  };
});

function table(head: string[], rows: Array<Array<string | number>>): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

console.log(`\napi-crud: ${CONNECTIONS} connections, ${SECONDS} s per run (after ${WARMUP_SECONDS} s warm-up), Node ${process.version}, ${os.cpus().length} CPUs\n`);
console.log(table(
  ['scenario', 'server', 'req/s', 'p50 ms', 'p99 ms', '% of anchor', 'non-2xx'],
  measurements.map((m) => {
    const summary = summaries.find((s) => s.scenario === m.scenario)!;
    return [m.scenario, m.server, m.reqPerSec.toFixed(0), m.p50Ms.toFixed(1), m.p99Ms.toFixed(1), m.server === 'settle' ? `${summary.percentOfAnchor.toFixed(1)} %` : '', m.non2xx + m.errors];
  }),
));
console.log(`\ntargets: Settle throughput >= ${TARGET_RATIO * 100} % of the anchor, Settle p99 < ${TARGET_P99_MS} ms\n`);
console.log(table(
  ['scenario', 'throughput', 'p99'],
  summaries.map((s) => [s.scenario, `${s.throughputTarget} (${s.percentOfAnchor.toFixed(1)} %)`, `${s.p99Target} (${s.settleP99Ms.toFixed(1)} ms)`]),
));

const resultsDir = path.join(projectRoot, 'bench/results');
fs.mkdirSync(resultsDir, { recursive: true });
const resultsFile = path.join(resultsDir, 'api-crud.json');
fs.writeFileSync(resultsFile, `${JSON.stringify({
  benchmark: 'api-crud',
  date: new Date().toISOString(),
  node: process.version,
  cpus: os.cpus().length,
  connections: CONNECTIONS,
  seconds: SECONDS,
  warmupSeconds: WARMUP_SECONDS,
  targets: { percentOfAnchor: TARGET_RATIO * 100, p99Ms: TARGET_P99_MS },
  measurements,
  summaries,
}, null, 2)}\n`);
console.log(`\nresults: ${path.relative(projectRoot, resultsFile)}`);

await cleanup();
process.exit(0);
