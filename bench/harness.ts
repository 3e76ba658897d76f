/**
 * What the benchmarks share: Postgres (DATABASE_URL when set, else an embedded server in a temp
 * dir) with a fresh, migrated database dropped afterwards; a test secret key; Settle's web process
 * and the bare Koa anchor (bench/anchor-server.ts) each in a child process, so neither shares an
 * event loop with the load generator (autocannon); the measuring loop (warm-up, then a timed run
 * per scenario and server); the tables and the JSON results file. Next to req/s and latency each
 * run records the server's CPU ms per request (and PostgreSQL's, when its server runs on this machine) and the load average: on a shared machine req/s
 * moves with the neighbours' load, CPU per request much less.
 *
 * Env: BENCH_SECONDS (per scenario and server, default 10), BENCH_WARMUP_SECONDS (default 2),
 * BENCH_CONNECTIONS (default 32), BENCH_PROFILE=1 (a V8 CPU profile of each server process in
 * bench/results/profiles, named <bench>-<server>-<time>.cpuprofile).
 */
// @ts-ignore -- autocannon ships no type declarations
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../api/config.ts';
import { WEB_NODE_FLAGS } from '../api/process.ts';
import { createDb } from '../api/db/connection.ts';
import { freePort, startEmbeddedPostgres, type EmbeddedServer } from '../api/db/embedded.ts';
import { migrate } from '../api/db/migrate.ts';
import { benchKey } from './keys.ts';
import { adminQuery, databaseUrl } from '../api/db/admin.ts';

export function positive(name: string, fallback: number, zeroOk = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (!zeroOk && value === 0)) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

export const SECONDS = positive('BENCH_SECONDS', 10);
export const WARMUP_SECONDS = positive('BENCH_WARMUP_SECONDS', 2, true);
export const CONNECTIONS = positive('BENCH_CONNECTIONS', 32);
export const resultsDir = path.join(projectRoot, 'bench/results');
export const profileDir = path.join(resultsDir, 'profiles');

// ---- cleanup, in reverse order of setup, also on Ctrl-C ------------------------------------
const cleanups: Array<() => Promise<void>> = [];
let cleaning: Promise<void> | null = null;
export function cleanup(): Promise<void> {
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

export function startChild(bench: string, name: string, script: string, env: Record<string, string>): ChildProcess {
  const profileName = `${bench}-${name.replace(/\W+/g, '-')}-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`;
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', profileName] : [];
  const nodeFlags = script === 'api/server.ts' ? WEB_NODE_FLAGS : [];
  const child = spawn(process.execPath, [...profile, ...nodeFlags, path.join(projectRoot, script)], {
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
    if (profile.length) console.error(`${name} CPU profile: ${path.relative(projectRoot, path.join(profileDir, profileName))}`);
  });
  return child;
}

/** Until `url` answers; `ms` (default 30 s) is longer on a loaded machine, where a process takes long to start. */
export async function waitForHttp(url: string, child: ChildProcess, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${url}: the process exited with code ${child.exitCode}`);
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`${url} did not answer within ${ms / 1000} s`);
}

// ---- setup -----------------------------------------------------------------------------------
export type ServerName = 'settle' | 'anchor';
export const SERVER_NAMES: ServerName[] = ['settle', 'anchor'];

export interface BenchEnv {
  servers: Record<ServerName, string>;
  key: { secret: string; orgId: string };
  /** the benchmark's own database (for generating existing rows) */
  databaseUrl: string;
  /** Basic auth with the key, JSON body */
  headers: Record<string, string>;
  /** the servers' process ids (memory and CPU can be read from /proc) */
  pids: Record<ServerName, number>;
}

/**
 * BENCH_DATABASE (default unset: a fresh database, dropped afterwards): the name of a database on
 * DATABASE_URL's server to run in and keep, made when missing, so the rows a bench grows (1M
 * payments take long to generate) serve the next run too; the org "bench" and its rows are reused.
 */
function keptDatabase(): string | null {
  const name = process.env.BENCH_DATABASE;
  if (!name) return null;
  if (!process.env.DATABASE_URL) throw new Error('BENCH_DATABASE needs DATABASE_URL (a server to keep it on)');
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`BENCH_DATABASE must be a plain lower-case name, got "${name}"`);
  return name;
}

/** A fresh migrated database, a test key of org "bench", and both servers answering. */
/** `settleEnv`: more environment for Settle's web process (e.g. its REPORTING_URL; `off` unless given). */
/** A fresh, migrated database for one bench run (on DATABASE_URL's server, else an embedded one), dropped at cleanup. */
export async function benchDatabase(): Promise<string> {
  let serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-bench-pg-'));
    // As root, the server runs as a `postgres` user that must be able to enter this directory.
    fs.chmodSync(dir, 0o755);
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    const embedded: EmbeddedServer = await startEmbeddedPostgres(dir, { persistent: false });
    cleanups.push(() => embedded.stop());
    serverUrl = embedded.url('postgres');
    postmasterPid = Number(fs.readFileSync(path.join(dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]) || undefined;
  }
  const adminUrl = serverUrl;
  const kept = keptDatabase();
  const database = kept ?? `settle_bench_${process.pid}_${Date.now().toString(36)}`;
  benchDatabaseName = database;
  if (kept) {
    await adminQuery(adminUrl, `create database ${database}`).catch((error: { code?: string }) => {
      if (error.code !== '42P04') throw error; // it exists: the rows grown by an earlier run are reused
    });
  } else {
    await adminQuery(adminUrl, `create database ${database}`);
    cleanups.push(() => adminQuery(adminUrl, `drop database if exists ${database} with (force)`));
  }
  const benchUrl = databaseUrl(serverUrl, database);
  await migrate(benchUrl);
  return benchUrl;
}

export async function startServers(bench: string, settleEnv: Record<string, string> = {}): Promise<BenchEnv> {
  const benchUrl = await benchDatabase();

  const db = createDb(benchUrl, 2);
  const key = await benchKey(db, 'bench');
  await db.destroy();

  const settlePort = await freePort();
  const anchorPort = await freePort();
  const settle = startChild(bench, 'settle web', 'api/server.ts', {
    DATABASE_URL: benchUrl,
    PORT: String(settlePort),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    // BENCH_RATE_LIMIT (default off): a limit high enough never to refuse measures the limiter's own cost.
    SETTLE_RATE_LIMIT: process.env.BENCH_RATE_LIMIT ?? 'off',
    // No reporting process runs beside these benchmarks: without this, the web process would
    // queue every request's log row for a store that never answers (bench:audit measures the
    // request log, and bench:reporting and bench:exports start reporting and pass its URL).
    REPORTING_URL: 'off',
    ...settleEnv,
  });
  const anchor = startChild(bench, 'anchor', 'bench/anchor-server.ts', {
    DATABASE_URL: benchUrl,
    PORT: String(anchorPort),
    ANCHOR_ORG_ID: key.orgId,
    ANCHOR_POOL: '10',
  });
  serverPids.settle = settle.pid;
  serverPids.anchor = anchor.pid;
  const servers = { settle: `http://127.0.0.1:${settlePort}`, anchor: `http://127.0.0.1:${anchorPort}` };
  await waitForHttp(`${servers.settle}/healthz`, settle);
  await waitForHttp(`${servers.anchor}/customers/none`, anchor);
  const headers = {
    Authorization: `Basic ${Buffer.from(`${key.secret}:`).toString('base64')}`,
    'Content-Type': 'application/json',
  };
  return { servers, key, headers, databaseUrl: benchUrl, pids: { settle: settle.pid!, anchor: anchor.pid! } };
}

/** BENCH_ROWS: the tenant sizes each scenario runs at, in order (default 10k then 1M existing rows). */
export function dataSizes(): number[] {
  const raw = process.env.BENCH_ROWS ?? '10000,1000000';
  const sizes = raw.split(',').map((s) => Number(s.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n < 0)) throw new Error(`BENCH_ROWS must be comma-separated row counts, got "${raw}"`);
  return sizes;
}

/**
 * Grows one table of the tenant to `rows` rows by SQL (fast, no API), shaped like the rows the API
 * writes, ids of the usual form. Statistics are left to autovacuum, as in production.
 */
export async function growTenant(databaseUrl: string, table: string, orgId: string, type: string, idPrefix: string, rows: number, data: string): Promise<void> {
  const db = createDb(databaseUrl, 1);
  try {
    const existing = Number((await db.raw(`select count(*) as n from ${table} where org_id = ?`, [orgId])).rows[0].n);
    for (let done = existing; done < rows; done += 100_000) {
      const batch = Math.min(100_000, rows - done);
      await db.raw(
        `insert into ${table} (id, org_id, environment, type, data, created_at, modified_at)
         select ? || substr(md5(random()::text || g::text), 1, 24), ?, 'test', ?, ${data}::jsonb,
                now() - make_interval(secs => g), now() - make_interval(secs => g)
           from generate_series(1, ?) g`,
        [`${idPrefix}_`, orgId, type, batch],
      );
    }
  } finally {
    await db.destroy();
  }
}

// ---- measuring -------------------------------------------------------------------------------
export interface Target {
  /** autocannon takes the path from the url (it has no top-level `path` option) */
  path: string;
  options: Record<string, unknown>;
}

export interface Scenario {
  name: string;
  /** what each server is asked; the anchor may get a different (its nearest) route */
  targets: Record<ServerName, Target>;
}

export interface Measurement {
  scenario: string;
  server: ServerName;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /**
   * The server process's CPU time (user + system) per request over the timed run: unlike req/s,
   * it barely moves when other work shares the machine, so it is the figure to compare runs by.
   * Null where /proc is not there.
   */
  cpuMsPerRequest: number | null;
  /** PostgreSQL's CPU per request over the run (see postgresCpuBetween); null where it cannot be seen. */
  postgresCpuMsPerRequest: number | null;
  /** the 1-minute load average when the timed run ended */
  load1: number;
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
}

const serverPids: Partial<Record<ServerName, number>> = {};
/** The embedded server's postmaster, when this run started one. */
let postmasterPid: number | undefined;

/** The bench's own database: on a server of this machine, its backends are found by their process titles. */
let benchDatabaseName: string | undefined;

/**
 * CPU ms so far of each PostgreSQL process this run can see, by pid: the embedded server's
 * postmaster and all its children; on DATABASE_URL's server, when it runs on this machine, the
 * backends connected to the bench's database (their titles read `postgres: … <user> <database>
 * <host> …`; shared processes such as the WAL writer are not counted). Null when neither can be seen.
 */
function postgresCpuByPid(): Map<number, number> | null {
  if (postmasterPid === undefined && benchDatabaseName === undefined) return null;
  const byPid = new Map<number, number>();
  const postmasterCpu = cpuMs(postmasterPid);
  if (postmasterPid !== undefined && postmasterCpu !== null) byPid.set(postmasterPid, postmasterCpu);
  let seen = postmasterPid !== undefined;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const pid = Number(entry);
      if (postmasterPid !== undefined) {
        if (Number(fs.readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) === postmasterPid) byPid.set(pid, cpuMs(pid) ?? 0);
      } else {
        const title = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
        if (title.startsWith('postgres: ') && title.includes(` ${benchDatabaseName} `)) {
          byPid.set(pid, cpuMs(pid) ?? 0);
          seen = true;
        }
      }
    } catch {
      // gone meanwhile
    }
  }
  return seen ? byPid : null;
}

/**
 * PostgreSQL CPU ms between two readings: each process's growth, counting a process that started
 * meanwhile from zero. A backend that exited meanwhile takes its CPU of the run with it (an
 * undercount, never a negative figure, as a plain difference of totals gave when backends were
 * replaced during a run).
 */
function postgresCpuBetween(before: Map<number, number> | null, after: Map<number, number> | null): number | null {
  if (before === null || after === null) return null;
  let total = 0;
  for (const [pid, ms] of after) total += Math.max(0, ms - (before.get(pid) ?? 0));
  return total;
}

/** CPU time the process has used so far, in ms (Linux /proc; null elsewhere). */
function cpuMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    // Fields after the parenthesised command name: utime and stime are the 12th and 13th, in clock ticks.
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}
/** USER_HZ: 100 on every Linux architecture Node supports. */
const CLOCK_TICKS = 100;

async function run(url: string, options: Record<string, unknown>, seconds: number): Promise<any> {
  return await autocannon({ url, connections: CONNECTIONS, duration: seconds, timeout: 10, ...options });
}

export async function measure(servers: Record<ServerName, string>, scenarios: Scenario[]): Promise<Measurement[]> {
  const measurements: Measurement[] = [];
  for (const scenario of scenarios) {
    for (const server of SERVER_NAMES) {
      process.stderr.write(`${scenario.name} on ${server}: `);
      const target = scenario.targets[server];
      const url = servers[server] + target.path;
      if (WARMUP_SECONDS > 0) await run(url, target.options, WARMUP_SECONDS);
      const cpuBefore = cpuMs(serverPids[server]);
      const postgresBefore = postgresCpuByPid();
      const result = await run(url, target.options, SECONDS);
      const cpuAfter = cpuMs(serverPids[server]);
      const postgresUsed = postgresCpuBetween(postgresBefore, postgresCpuByPid());
      const perRequest = (before: number | null, after: number | null) =>
        before === null || after === null || result.requests.total === 0 ? null : Math.round(((after - before) / result.requests.total) * 1000) / 1000;
      const measurement: Measurement = {
        scenario: scenario.name,
        server,
        reqPerSec: result.requests.average,
        p50Ms: result.latency.p50,
        p99Ms: result.latency.p99,
        cpuMsPerRequest: perRequest(cpuBefore, cpuAfter),
        postgresCpuMsPerRequest: perRequest(postgresUsed === null ? null : 0, postgresUsed),
        load1: Math.round(os.loadavg()[0] * 100) / 100,
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
  return measurements;
}

// ---- report ----------------------------------------------------------------------------------
export interface Targets {
  /** Settle's throughput as a fraction of the anchor's, e.g. 0.6 */
  ratio: number;
  p99Ms: number;
}

export interface Summary {
  scenario: string;
  settleReqPerSec: number;
  anchorReqPerSec: number;
  percentOfAnchor: number;
  settleP99Ms: number;
  throughputTarget: 'PASS' | 'MISS';
  p99Target: 'PASS' | 'MISS';
}

export function summarize(scenarios: Scenario[], measurements: Measurement[], targets: Targets): Summary[] {
  return scenarios.map(({ name }) => {
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
      throughputTarget: clean && ratio >= targets.ratio ? 'PASS' : 'MISS',
      p99Target: clean && s.p99Ms < targets.p99Ms ? 'PASS' : 'MISS',
    };
  });
}

function table(head: string[], rows: Array<Array<string | number>>): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

/** The tables on stdout and the JSON in bench/results/<bench>.json. */
export function report(bench: string, measurements: Measurement[], summaries: Summary[], targets: Targets, extra: Record<string, unknown> = {}): void {
  console.log(`\n${bench}: ${CONNECTIONS} connections, ${SECONDS} s per run (after ${WARMUP_SECONDS} s warm-up), Node ${process.version}, ${os.cpus().length} CPUs\n`);
  console.log(table(
    ['scenario', 'server', 'req/s', 'p50 ms', 'p99 ms', '% of anchor', 'CPU ms/req', 'PG CPU ms/req', 'load', 'non-2xx'],
    measurements.map((m) => {
      const summary = summaries.find((s) => s.scenario === m.scenario)!;
      return [m.scenario, m.server, m.reqPerSec.toFixed(0), m.p50Ms.toFixed(1), m.p99Ms.toFixed(1), m.server === 'settle' ? `${summary.percentOfAnchor.toFixed(1)} %` : '',
        m.cpuMsPerRequest?.toFixed(3) ?? '-', m.postgresCpuMsPerRequest?.toFixed(3) ?? '-', m.load1.toFixed(2), m.non2xx + m.errors];
    }),
  ));
  console.log(`\ntargets: Settle throughput >= ${targets.ratio * 100} % of the anchor, Settle p99 < ${targets.p99Ms} ms\n`);
  console.log(table(
    ['scenario', 'throughput', 'p99'],
    summaries.map((s) => [s.scenario, `${s.throughputTarget} (${s.percentOfAnchor.toFixed(1)} %)`, `${s.p99Target} (${s.settleP99Ms.toFixed(1)} ms)`]),
  ));

  fs.mkdirSync(resultsDir, { recursive: true });
  const resultsFile = path.join(resultsDir, `${bench}.json`);
  fs.writeFileSync(resultsFile, `${JSON.stringify({
    benchmark: bench,
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    ...extra,
    connections: CONNECTIONS,
    seconds: SECONDS,
    warmupSeconds: WARMUP_SECONDS,
    targets: { percentOfAnchor: targets.ratio * 100, p99Ms: targets.p99Ms },
    measurements,
    summaries,
  }, null, 2)}\n`);
  console.log(`\nresults: ${path.relative(projectRoot, resultsFile)}`);
}
