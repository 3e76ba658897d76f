/**
 * `npm run bench:webhooks`: webhook delivery throughput and commit-to-receipt latency of one
 * worker process (`node workers/main.ts`, a child process) delivering signed webhooks to a
 * loopback receiver that answers 200, beside a same-run anchor: graphile-worker's own `run`
 * executing no-op jobs (a child process too: this file with BENCH_ROLE=noop-worker) on the same
 * database with the same settings.
 *
 * Events are committed through the outbox (`recordEvents` in a transaction, in batches), so every
 * delivery takes the production path: a dispatch_events job (sharded, batched) → delivery row + deliver_webhook job →
 * signed POST → attempt log. Latency runs from the moment the event's transaction commit is
 * acknowledged to this process to the moment the receiver (in this process) has read the request.
 * For the anchor it runs from the commit of the add_jobs transaction to the no-op task starting.
 *
 * Phases, for Settle and then for the anchor: `200/s` (open loop: a batch of 10 every 50 ms) and
 * `max` (a backlog of BENCH_BACKLOG outstanding kept topped up in batches of 200: sustained
 * deliveries/s; latency there is queueing, about backlog ÷ rate); for Settle also `80% of max`
 * (open loop at 0.8 × the measured max). Each phase has a warm-up, then a timed window; only
 * events committed in the window count for latency.
 *
 * Postgres: DATABASE_URL when set, else an embedded server in a temp dir; a fresh database is
 * created, migrated and dropped afterwards.
 *
 * Env: BENCH_SECONDS (per phase, default 10), BENCH_WARMUP_SECONDS (default 3), BENCH_BACKLOG
 * (default 500), BENCH_PROFILE=1 (a V8 CPU profile of the Settle worker process in
 * bench/results/profiles), BENCH_ONLY=settle|anchor (one side only, for tuning sweeps),
 * BENCH_ANCHOR_QUERIES=k (diagnostic: each anchor job also runs k sequential `select 1`, pricing
 * the database round trips a real task makes). Worker settings, applied to Settle and the anchor alike, default to
 * TUNED below: WORKER_CONCURRENCY, WORKER_LOCAL_QUEUE, WORKER_COMPLETE_BATCH_MS,
 * WORKER_POLL_INTERVAL. Results: tables on stdout, JSON in bench/results/webhooks.json.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Logger, run } from 'graphile-worker';
import { loadConfig, projectRoot } from '../api/config.ts';
import { createDb, type Db } from '../api/db/connection.ts';
import { startEmbeddedPostgres } from '../api/db/embedded.ts';
import { recordEvents, type EventTenant } from '../api/db/events.ts';
import { migrate } from '../api/db/migrate.ts';
import { adminQuery, databaseUrl } from '../api/db/admin.ts';
import { createKey } from '../api/keys.ts';
import { startWeb } from '../api/server.ts';
import { verifyServiceSignature } from '../api/webhooks/receiver.ts';

/**
 * The worker settings this benchmark was tuned with (2 cores, one worker process): a local queue
 * that fetches and locks a batch of jobs per round trip (at least the concurrency, or
 * graphile-worker warns), completions gathered for 2 ms into one statement, and concurrency 32
 * to overlap receiver and database round trips. On the anchor this took no-op jobs from ~960/s
 * (1.3 ms CPU per job, defaults 10/off/0) to ~3,800/s (0.27 ms). Settle's deliveries moved only
 * within run-to-run noise across the sweep (10/0/-1, 10/0/0, 16/32/0, 32/64/2, 64/128/5): their
 * cost is in the task bodies, not in graphile-worker's fetching and completing.
 */
const TUNED: Record<string, string> = {
  WORKER_CONCURRENCY: '32',
  WORKER_LOCAL_QUEUE: '64',
  WORKER_COMPLETE_BATCH_MS: '2',
  WORKER_POLL_INTERVAL: '250',
};
const SETTINGS = Object.fromEntries(Object.entries(TUNED).map(([name, value]) => [name, process.env[name] || value]));

function positive(name: string, fallback: number, zeroOk = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (!zeroOk && value === 0)) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

const SECONDS = positive('BENCH_SECONDS', 10);
const WARMUP_SECONDS = positive('BENCH_WARMUP_SECONDS', 3, true);
const BACKLOG = positive('BENCH_BACKLOG', 500);
const ONLY = process.env.BENCH_ONLY ?? '';
const LOW_RATE = 200;
const TICK_MS = 50;
const MAX_BATCH = 200;
const resultsDir = path.join(projectRoot, 'bench/results');
const profileDir = path.join(resultsDir, 'profiles');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** High-resolution wall-clock ms, comparable across processes on this machine. */
const epochNow = () => performance.timeOrigin + performance.now();

// ---- the anchor's worker: graphile-worker `run` with one no-op task ---------------------------
async function noopWorker(): Promise<void> {
  const config = loadConfig();
  const pgPool = new pg.Pool({ connectionString: config.databaseUrl, max: config.workerConcurrency + 2 });
  pgPool.on('error', () => {});
  pgPool.on('connect', (client) => client.on('error', () => {}));
  let done = 0;
  const queries = positive('BENCH_ANCHOR_QUERIES', 0, true);
  // Start times per batch; the parent sends each batch's commit time, the latencies are
  // computed here and sent back at the end.
  const started = new Map<number, number[]>();
  const committed = new Map<number, number>();
  const runner = await run({
    pgPool,
    logger: new Logger(() => () => {}),
    preset: {
      worker: {
        localQueue: config.workerLocalQueue > 1 ? { size: config.workerLocalQueue } : undefined,
        completeJobBatchDelay: config.workerCompleteBatchMs,
      },
    },
    crontab: '',
    concurrency: config.workerConcurrency,
    noHandleSignals: true,
    pollInterval: config.workerPollIntervalMs,
    taskList: {
      noop: async (payload) => {
        for (let i = 0; i < queries; i++) await pgPool.query('select 1');
        done += 1;
        const batch = (payload as { b: number }).b;
        if (batch >= 0) {
          const list = started.get(batch) ?? [];
          list.push(epochNow());
          started.set(batch, list);
        }
      },
    },
  });
  const report = setInterval(() => process.send!({ done, at: epochNow() }), 100);
  process.on('message', (message: { batch?: number; committedAt?: number; latencies?: { from: number; to: number } }) => {
    if (message.batch !== undefined && message.committedAt !== undefined) committed.set(message.batch, message.committedAt);
    if (message.latencies) {
      const values: number[] = [];
      for (const [batch, at] of committed) {
        if (batch < message.latencies.from || batch >= message.latencies.to) continue;
        for (const start of started.get(batch) ?? []) values.push(start - at);
      }
      process.send!({ latencies: values });
    }
  });
  process.on('SIGTERM', () => {
    clearInterval(report);
    runner.stop().then(() => pgPool.end()).finally(() => process.exit(0));
  });
}

// ---- shared machinery --------------------------------------------------------------------------
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

function startChild(name: string, args: string[], env: Record<string, string>, ipc = false): ChildProcess {
  const profileName = `webhooks-${name}-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`;
  const profile = process.env.BENCH_PROFILE && name === 'worker' ? ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', profileName] : [];
  const child = spawn(process.execPath, [...profile, ...args], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ipc ? ['ignore', 'inherit', 'inherit', 'ipc'] : ['ignore', 'inherit', 'inherit'],
  });
  let stopping = false;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code, signal) => {
    if (!stopping && !cleaning) console.error(`${name} exited unexpectedly (code ${code}, signal ${signal})`);
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    stopping = true;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
    if (profile.length) console.error(`${name} CPU profile: ${path.relative(projectRoot, path.join(profileDir, profileName))}`);
  };
  cleanups.push(stop);
  (child as ChildProcess & { stopNow: () => Promise<void> }).stopNow = stop;
  return child;
}

async function stopChild(child: ChildProcess): Promise<void> {
  await (child as ChildProcess & { stopNow: () => Promise<void> }).stopNow();
}

function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** CPU seconds (user + system) used so far by a process, from /proc. */
function cpuSeconds(pid: number | undefined): number {
  if (!pid) return NaN;
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** Busy CPU seconds of the whole machine so far. */
function machineBusySeconds(): number {
  return os.cpus().reduce((sum, cpu) => sum + (cpu.times.user + cpu.times.nice + cpu.times.sys + cpu.times.irq) / 1000, 0);
}

/** The embedded server's postmaster, when this run started one: its CPU and its backends' count. */
let postmasterPid: number | null = null;

function postgresCpuSeconds(): number {
  if (!postmasterPid) return NaN;
  let total = cpuSeconds(postmasterPid);
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = fs.readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ');
      if (Number(fields[1]) === postmasterPid) total += (Number(fields[11]) + Number(fields[12])) / 100;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

interface PhaseResult {
  phase: string;
  system: 'settle' | 'anchor';
  offeredPerSec: number | null;
  donePerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  samples: number;
  /** CPU cores used in the window: the worker process, the Postgres server, the whole machine */
  workerCpuCores: number;
  postgresCpuCores: number;
  machineCpuCores: number;
}

interface Measured {
  donePerSec: number;
  workerCpuCores: number;
  postgresCpuCores: number;
  machineCpuCores: number;
}

/**
 * Drives one phase: `produce(count)` commits `count` events (or jobs) and returns how many it
 * committed; `done()` how many have been completed so far. Open loop at `rate`, or with
 * `rate: null` a backlog kept topped up. The timed window opens after the warm-up (and, with a
 * backlog, once a backlog's worth has completed, so the pipeline is full) and lasts SECONDS.
 */
async function drive(options: {
  rate: number | null;
  produce: (count: number, inWindow: boolean) => Promise<number>;
  done: () => number;
  workerPid: number | undefined;
}): Promise<Measured> {
  let produced = 0;
  const start = performance.now();
  const baseline = options.done();
  let windowStart = -1;
  let doneAtWindowStart = 0;
  let cpuAtWindowStart = 0;
  let postgresAtWindowStart = 0;
  let machineAtWindowStart = 0;
  let carry = 0;
  let tick = 0;
  while (windowStart < 0 || performance.now() < windowStart + SECONDS * 1000) {
    const now = performance.now();
    if (windowStart < 0 && now >= start + WARMUP_SECONDS * 1000 && (options.rate !== null || options.done() - baseline >= BACKLOG)) {
      windowStart = now;
      doneAtWindowStart = options.done();
      cpuAtWindowStart = cpuSeconds(options.workerPid);
      postgresAtWindowStart = postgresCpuSeconds();
      machineAtWindowStart = machineBusySeconds();
    }
    const inWindow = windowStart >= 0;
    if (options.rate !== null) {
      // Open loop on an absolute schedule, so a slow commit does not lower the offered rate.
      carry += (options.rate * TICK_MS) / 1000;
      const count = Math.floor(carry);
      carry -= count;
      if (count > 0) produced += await options.produce(count, inWindow);
      tick += 1;
      const wait = start + tick * TICK_MS - performance.now();
      if (wait > 0) await sleep(wait);
    } else {
      const outstanding = produced - (options.done() - baseline);
      if (outstanding <= BACKLOG - MAX_BATCH) produced += await options.produce(MAX_BATCH, inWindow);
      else await sleep(2);
    }
  }
  const elapsed = (performance.now() - windowStart) / 1000;
  const measured: Measured = {
    donePerSec: (options.done() - doneAtWindowStart) / elapsed,
    workerCpuCores: (cpuSeconds(options.workerPid) - cpuAtWindowStart) / elapsed,
    postgresCpuCores: (postgresCpuSeconds() - postgresAtWindowStart) / elapsed,
    machineCpuCores: (machineBusySeconds() - machineAtWindowStart) / elapsed,
  };
  // Drain, so the next phase starts from an empty queue.
  const drainUntil = Date.now() + 300_000;
  while (options.done() - baseline < produced && Date.now() < drainUntil) await sleep(20);
  if (options.done() - baseline < produced) throw new Error(`drain: ${produced - (options.done() - baseline)} still outstanding after 300 s`);
  return measured;
}

function table(head: string[], rows: Array<Array<string | number>>): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

// ---- the benchmark -----------------------------------------------------------------------------
async function main(): Promise<void> {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`${signal}: cleaning up`);
      cleanup().finally(() => process.exit(130));
    });
  }

  let serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-bench-pg-'));
    // As root, the server runs as a `postgres` user that must be able to enter this directory.
    fs.chmodSync(dir, 0o755);
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    const embedded = await startEmbeddedPostgres(dir, { persistent: false });
    cleanups.push(() => embedded.stop());
    postmasterPid = Number(fs.readFileSync(path.join(dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]) || null;
    serverUrl = embedded.url('postgres');
  }
  const database = `settle_bench_${process.pid}_${Date.now().toString(36)}`;
  const adminUrl = serverUrl;
  await adminQuery(adminUrl, `create database ${database}`);
  cleanups.push(() => adminQuery(adminUrl, `drop database if exists ${database} with (force)`));
  const benchUrl = databaseUrl(serverUrl, database);
  await migrate(benchUrl);

  const db: Db = createDb(benchUrl, 4);
  cleanups.push(() => db.destroy());
  const key = await createKey(db, 'bench', 'test');
  const tenant: EventTenant = { orgId: key.orgId, environment: 'test' };
  const vaultKey = randomBytes(32).toString('base64');

  // ---- the receiver: answers 200, timestamps each event's arrival --------------------------------
  const committedAt = new Map<string, number>();
  let latencies: number[] = [];
  let received = 0;
  let duplicates = 0;
  let badSignatures = 0;
  let verified = 0;
  let secret = '';
  const seen = new Set<string>();
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const at = performance.now();
      const id = req.headers['x-service-event-id'] as string;
      res.writeHead(200).end();
      if (seen.has(id)) {
        duplicates += 1;
        return;
      }
      seen.add(id);
      received += 1;
      const committed = committedAt.get(id);
      if (committed !== undefined) {
        latencies.push(at - committed);
        committedAt.delete(id);
      }
      // Signed, byte for byte: check one in 50 (checking all would load this process, not Settle).
      if (received % 50 === 1) {
        verified += 1;
        if (!verifyServiceSignature(secret, Buffer.concat(chunks), req.headers['x-service-signature'] as string)) badSignatures += 1;
      }
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => {
    receiver.closeAllConnections();
    receiver.close(() => resolve());
  }));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;

  // ---- the webhook, created through the API (the web process briefly, in this process) ----------
  const web = await startWeb(loadConfig({ DATABASE_URL: benchUrl, PORT: '0', LOG_LEVEL: 'warn', SETTLE_RATE_LIMIT: 'off', SETTLE_VAULT_KEY: vaultKey }));
  const response = await fetch(`${web.url}/webhooks`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${key.secret}:`).toString('base64')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ trigger: 'processing_status', url: receiverUrl }),
  });
  const webhook = (await response.json()) as { sender_secret?: string };
  await web.stop();
  if (response.status !== 200 || !webhook.sender_secret) throw new Error(`creating the webhook: ${response.status} ${JSON.stringify(webhook)}`);
  secret = webhook.sender_secret;

  const workerEnv = { ...SETTINGS, DATABASE_URL: benchUrl, LOG_LEVEL: 'warn', WEBHOOK_ALLOW_PRIVATE: 'true', SETTLE_VAULT_KEY: vaultKey };
  fs.mkdirSync(profileDir, { recursive: true });

  const results: PhaseResult[] = [];
  const loadAverage = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const loadBefore = loadAverage();
  let logged = 0;

  // ---- Settle ---------------------------------------------------------------------------------
  console.error(`settings: ${Object.entries(SETTINGS).map(([k, v]) => `${k}=${v}`).join(' ')}; load average ${loadBefore}`);
  if (ONLY !== 'anchor') {
    const worker = startChild('worker', [path.join(projectRoot, 'workers/main.ts')], workerEnv);
    const up = Date.now() + 30_000;
    while (Number((await db('worker_heartbeats').count({ n: '*' }))[0].n) === 0 && Date.now() < up) await sleep(50);

    let sequence = 0;
    const produceEvents = async (count: number, inWindow: boolean): Promise<number> => {
      const drafts = Array.from({ length: count }, () => {
        sequence += 1;
        return { trigger: 'processing_status', objectType: 'processing_account', objectId: `acct_bench_${sequence}`, value: { id: `acct_bench_${sequence}`, status: 'active' } };
      });
      const ids = await db.transaction((tx) => recordEvents(tx, tenant, drafts));
      const at = performance.now();
      if (inWindow) for (const id of ids) if (!seen.has(id)) committedAt.set(id, at);
      return ids.length;
    };
    const settlePhase = async (phase: string, rate: number | null) => {
      process.stderr.write(`settle ${phase}: `);
      latencies = [];
      committedAt.clear();
      const measured = await drive({ rate, produce: produceEvents, done: () => received, workerPid: worker.pid });
      const sorted = latencies.sort((a, b) => a - b);
      const result: PhaseResult = {
        phase, system: 'settle', offeredPerSec: rate, donePerSec: measured.donePerSec,
        p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99), maxMs: sorted.at(-1) ?? NaN, samples: sorted.length,
        workerCpuCores: measured.workerCpuCores, postgresCpuCores: measured.postgresCpuCores, machineCpuCores: measured.machineCpuCores,
      };
      results.push(result);
      process.stderr.write(`${result.donePerSec.toFixed(0)} deliveries/s, p50 ${result.p50Ms.toFixed(1)} ms, p99 ${result.p99Ms.toFixed(1)} ms, worker CPU ${(result.workerCpuCores * 100).toFixed(0)} %\n`);
      return result;
    };
    await settlePhase(`${LOW_RATE}/s`, LOW_RATE);
    const max = await settlePhase('max', null);
    await settlePhase('80% of max', Math.round(max.donePerSec * 0.8));
    logged = Number((await db('webhook_logs').count({ n: '*' }))[0].n);
    await stopChild(worker);
  }

  // ---- the anchor: graphile-worker, no-op jobs, same database and settings ----------------------
  if (ONLY !== 'settle') {
    const anchor = startChild('noop-worker', [path.join(projectRoot, 'bench/webhooks.ts')], { ...workerEnv, BENCH_ROLE: 'noop-worker' }, true);
    let anchorDone = 0;
    const pendingLatencies: Array<(values: number[]) => void> = [];
    anchor.on('message', (message: { done?: number; latencies?: number[] }) => {
      if (message.done !== undefined) anchorDone = message.done;
      if (message.latencies) pendingLatencies.shift()?.(message.latencies);
    });
    const anchorUp = Date.now() + 30_000;
    while (anchorDone === 0 && Date.now() < anchorUp) {
      await db.raw(`select graphile_worker.add_job('noop', json_build_object('b', -1))`);
      await sleep(100);
    }
    await sleep(300);
    let batch = 0;
    const produceJobs = async (count: number, inWindow: boolean): Promise<number> => {
      const id = inWindow ? batch++ : -1;
      await db.raw(
        `select graphile_worker.add_jobs(array(
           select row('noop', json_build_object('b', ?::int), null, null, null, null, null, null)::graphile_worker.job_spec
             from generate_series(1, ?::int)))`,
        [id, count]);
      if (id >= 0) anchor.send({ batch: id, committedAt: epochNow() });
      return count;
    };
    const anchorPhase = async (phase: string, rate: number | null) => {
      process.stderr.write(`anchor ${phase}: `);
      const first = batch;
      const measured = await drive({ rate, produce: produceJobs, done: () => anchorDone, workerPid: anchor.pid });
      const values = await new Promise<number[]>((resolve) => {
        pendingLatencies.push(resolve);
        anchor.send({ latencies: { from: first, to: batch } });
      });
      const sorted = values.sort((a, b) => a - b);
      const result: PhaseResult = {
        phase, system: 'anchor', offeredPerSec: rate, donePerSec: measured.donePerSec,
        p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99), maxMs: sorted.at(-1) ?? NaN, samples: sorted.length,
        workerCpuCores: measured.workerCpuCores, postgresCpuCores: measured.postgresCpuCores, machineCpuCores: measured.machineCpuCores,
      };
      results.push(result);
      process.stderr.write(`${result.donePerSec.toFixed(0)} jobs/s, p50 ${result.p50Ms.toFixed(1)} ms, p99 ${result.p99Ms.toFixed(1)} ms, worker CPU ${(result.workerCpuCores * 100).toFixed(0)} %\n`);
      return result;
    };
    await anchorPhase(`${LOW_RATE}/s`, LOW_RATE);
    await anchorPhase('max', null);
    await stopChild(anchor);
  }

  // ---- report ---------------------------------------------------------------------------------
  const loadAfter = loadAverage();
  const low = results.find((r) => r.system === 'settle' && r.phase === `${LOW_RATE}/s`);
  const max = results.find((r) => r.system === 'settle' && r.phase === 'max');
  const anchorMax = results.find((r) => r.system === 'anchor' && r.phase === 'max');
  const throughputPass = max !== undefined && max.donePerSec >= 1500 && badSignatures === 0;
  const latencyPass = low !== undefined && low.p99Ms < 100;
  console.log(`\nwebhooks: one worker process, ${SECONDS} s per phase (after ${WARMUP_SECONDS} s warm-up), backlog ${BACKLOG} at max, Node ${process.version}, ${os.cpus().length} CPUs`);
  console.log(`settings: ${Object.entries(SETTINGS).map(([k, v]) => `${k}=${v}`).join(' ')}`);
  console.log(`load average before ${loadBefore}, after ${loadAfter}. CPU: cores used in the window by the worker process, by the`);
  console.log('Postgres server (embedded only), and by every process on the machine; CPU ms/item = (worker + postgres) CPU per item done.\n');
  console.log(table(
    ['phase', 'system', 'offered/s', 'done/s', 'p50 ms', 'p99 ms', 'max ms', 'worker CPU', 'postgres CPU', 'CPU ms/item', 'machine CPU'],
    results.map((r) => [
      r.phase, r.system === 'settle' ? 'settle: signed deliveries' : 'anchor: graphile-worker no-op jobs',
      r.offeredPerSec ?? `backlog ${BACKLOG}`, r.donePerSec.toFixed(0), r.p50Ms.toFixed(1), r.p99Ms.toFixed(1), r.maxMs.toFixed(1),
      `${(r.workerCpuCores * 100).toFixed(0)} %`, `${(r.postgresCpuCores * 100).toFixed(0)} %`,
      (((r.workerCpuCores + r.postgresCpuCores) / r.donePerSec) * 1000).toFixed(2), `${(r.machineCpuCores * 100).toFixed(0)} %`,
    ]),
  ));
  const percentOfAnchor = max && anchorMax ? Math.round((max.donePerSec / anchorMax.donePerSec) * 1000) / 10 : null;
  if (max && anchorMax) {
    console.log(`\nat max: ${max.donePerSec.toFixed(0)} deliveries/s = ${percentOfAnchor} % of the anchor's ${anchorMax.donePerSec.toFixed(0)} no-op jobs/s `
      + '(each delivery is a deliver_webhook job; dispatch_events jobs each take a batch of events)');
  }
  if (max && low) {
    console.log(`receiver: ${received} events, ${duplicates} duplicates, ${verified} signatures checked, ${badSignatures} bad; ${logged} attempt logs written`);
    console.log(`targets: >= 1500 deliveries/s at max: ${throughputPass ? 'PASS' : 'MISS'} (${max.donePerSec.toFixed(0)}); `
      + `p99 commit-to-receipt < 100 ms at ${LOW_RATE}/s: ${latencyPass ? 'PASS' : 'MISS'} (${low.p99Ms.toFixed(1)} ms)`);
  }

  fs.mkdirSync(resultsDir, { recursive: true });
  const resultsFile = path.join(resultsDir, ONLY ? `webhooks-${ONLY}.json` : 'webhooks.json');
  fs.writeFileSync(resultsFile, `${JSON.stringify({
    benchmark: 'webhooks',
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    loadAverage: { before: loadBefore, after: loadAfter },
    settings: SETTINGS,
    seconds: SECONDS,
    warmupSeconds: WARMUP_SECONDS,
    backlog: BACKLOG,
    targets: { deliveriesPerSec: 1500, p99MsAt200: 100 },
    results,
    percentOfAnchor,
    receiver: { received, duplicates, verified, badSignatures },
    attemptLogs: logged,
    summary: max && low ? { throughput: throughputPass ? 'PASS' : 'MISS', latency: latencyPass ? 'PASS' : 'MISS' } : null,
  }, null, 2)}\n`);
  console.log(`\nresults: ${path.relative(projectRoot, resultsFile)}`);
}

if (process.env.BENCH_ROLE === 'noop-worker') {
  await noopWorker();
} else {
  try {
    await main();
  } finally {
    await cleanup();
  }
  process.exit(0);
}
