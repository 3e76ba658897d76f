/**
 * `npm run bench:webhooks`: webhook delivery throughput and commit-to-receipt latency of one
 * worker process (`node workers/main.ts`, a child process) delivering signed webhooks to a
 * loopback receiver that answers 200, beside a same-run anchor: graphile-worker's own `run`
 * executing no-op jobs (a child process too: this file with BENCH_ROLE=noop-worker) on the same
 * database with the same settings.
 *
 * Events are committed through the outbox (`recordEvents` in a transaction, in batches), so every
 * delivery takes the production path: the worker's dispatcher following the outbox → delivery row + deliver_webhook job →
 * signed POST → attempt log. Latency runs from the moment the event's transaction commit is
 * acknowledged to this process to the moment the receiver (in this process) has read the request.
 * For the anchor it runs from the commit of the add_jobs transaction to the no-op task starting.
 *
 * Tenant size: every phase runs at each size of BENCH_ROWS (default 10k, then 1M): the tenant's
 * events, deliveries and attempt logs are grown to that many rows each by SQL (dispatched,
 * delivered, logged, as months of traffic leave them) and vacuumed before its phases.
 *
 * A second anchor, the bare sender: a plain node:http client (keep-alive agent, 32 requests in
 * flight, in a child process) posting the same signed bodies to the same receiver, as fast as
 * the receiver takes them: the ceiling of the HTTP part alone on this machine.
 *
 * Phases, for Settle and then for the anchor: `200/s` (open loop: a batch of 10 every 50 ms) and
 * `max` (a backlog of BENCH_BACKLOG outstanding kept topped up in batches of 200: sustained
 * deliveries/s; latency there is queueing, about backlog ÷ rate); for Settle also `80% of max`
 * (open loop at 0.8 × the measured max). Each phase has a warm-up, then a timed window; only
 * events committed in the window count for latency. Last for Settle, `drain` (BENCH_DRAIN events,
 * default 10,000): the events are committed while no worker runs (nothing dispatches them), then
 * one worker is started and drains them, dispatching as it goes; the rate and CPU run from its
 * first receipt to its last, and the summary sets it beside the bare sender.
 *
 * First, at each tenant size, what an operator of `npm start` gets (every worker setting at its
 * default, BENCH_ONLY=defaults runs only these): `latency` (a web process and one worker, one org
 * with two webhooks, triggers `payment` and `processed`; card payments through the API at 200 a
 * second for BENCH_SECONDS after the warm-up; from each payment's 2xx to each of its two receipts,
 * p50/p99), `drain` (BENCH_DRAIN events queued, then one worker drains them, with the CPU ms per
 * delivery of the worker and of the bench database's backends) beside the bare sender with the
 * default concurrency's 10 requests in flight (run before the drain and after it, and the drain set
 * beside their mean; the ratio is then taken apart into what a delivery and a bare request each
 * cost in CPU, the receiver's share included, and how many cores each kept busy), and `scale` (BENCH_SCALE_BACKLOG
 * events, default 30,000, queued, then BENCH_SCALE_WORKERS worker processes, default 1,2,4, started
 * together drain them: the rate from the first receipt to the last, its ratio to one worker, the
 * CPU ms per delivery of the workers and of the bench database's backends, the CPU seconds of the
 * workers, those backends and the receiver over the drain's wall time as a share of the machine's cores
 * (utilisation), the deliveries they deferred, the duplicates the receiver saw, the jobs they released from processes they found silent (beside the
 * jobs an earlier phase's stopped worker left locked, whose release is right), and where their
 * database backends waited), with the receiver answering at once, and again answering after
 * 50 and 400 ms (BENCH_SCALE_DELAYS, default 0,50,400: at 400 ms a worker waits on its receiver, not
 * on the cores).
 * Each worker process opens up to 2 × WORKER_CONCURRENCY + 6
 * connections: four workers need a server allowing that many beside its other clients.
 *
 * Postgres: DATABASE_URL when set, else an embedded server in a temp dir; a fresh database is
 * created, migrated and dropped afterwards.
 *
 * Env: BENCH_ROWS (tenant sizes, default 10000,1000000), BENCH_SECONDS (per phase, default 10), BENCH_WARMUP_SECONDS (default 3), BENCH_BACKLOG
 * (default 500), BENCH_DRAIN (events of the drain phase, default 10000; 0 skips it), BENCH_PROFILE=1 (a V8 CPU profile of the Settle worker process in
 * bench/results/profiles), BENCH_PG_STATS=1 (for Settle's max and drain phases and the defaults' drain: WAL, its flushes and commits per delivery, buffers per delivery by table
 * and index, and sampled backend activity, on stderr), BENCH_ONLY=settle|anchor (one side only, for tuning sweeps) or drain (the drain
 * and the bare sender only) or defaults (the phases under `npm start`'s defaults only) or scale (the scale phase only), BENCH_SCALE_BACKLOG,
 * BENCH_SCALE_WORKERS, BENCH_SCALE_WARMUP and BENCH_SCALE_DELAYS (the scale phase, above), BENCH_LATENCY=0 (skips the defaults' latency phase),
 * BENCH_LATENCY_RATES (its payments a second, comma-separated, one phase each; default 200), BENCH_ONLY=latency (the defaults' latency phase alone),
 * BENCH_TIMELINE=1 (each latency phase also prints where the deliveries' time went, step by step: deliveryTimeline),
 * BENCH_DRAIN_WEBHOOKS (webhooks each event of the defaults' drain goes to, default 1: DRAIN_WEBHOOKS),
 * BENCH_ANCHOR_QUERIES=k (diagnostic: each anchor job also runs k sequential `select 1`, pricing
 * the database round trips a real task makes). Worker settings, applied to Settle and the anchor alike, default to
 * TUNED below: WORKER_CONCURRENCY, WORKER_LOCAL_QUEUE, WORKER_COMPLETE_BATCH_MS,
 * WORKER_POLL_INTERVAL. Results: tables on stdout, JSON in bench/results/webhooks.json.
 */
import { benchKey } from './keys.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Logger, run } from 'graphile-worker';
import { loadConfig, projectRoot } from '../api/config.ts';
import { createDb, rows, type Db } from '../api/db/connection.ts';
import { freePort, startEmbeddedPostgres } from '../api/db/embedded.ts';
import { recordEvents, type EventTenant } from '../api/db/events.ts';
import { migrate } from '../api/db/migrate.ts';
import { adminQuery, databaseUrl } from '../api/db/admin.ts';
import { startWeb } from '../api/server.ts';
import { WEB_NODE_FLAGS } from '../api/process.ts';
import { verifyServiceSignature } from '../api/webhooks/receiver.ts';
import { serviceSignature, standardWebhooksSignature } from '../api/webhooks/signature.ts';
import { PROCESSING_STATUS_TRIGGER } from '../api/families/accounts/triggers.ts';
import { attemptLogId } from '../workers/webhooks/deliveries.ts';

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
const DRAIN = positive('BENCH_DRAIN', 10_000, true);
/**
 * Webhooks of the drain's trigger (default 1), each at its own path of the receiver, so each event
 * of the defaults' drain makes that many deliveries. Every phase of the run sees them: for the
 * defaults' drain alone (BENCH_ONLY=defaults BENCH_LATENCY=0 BENCH_SCALE_BACKLOG=0).
 */
const DRAIN_WEBHOOKS = positive('BENCH_DRAIN_WEBHOOKS', 1);
const ONLY = process.env.BENCH_ONLY ?? '';
const PG_STATS = process.env.BENCH_PG_STATS === '1';
const LOW_RATE = 200;
/** BENCH_LATENCY_RATES: the card payments a second of the defaults' latency phase, one phase each (default 200). */
const LATENCY_RATES = (process.env.BENCH_LATENCY_RATES ?? String(LOW_RATE)).split(',').map(Number);
if (LATENCY_RATES.some((rate) => !Number.isFinite(rate) || rate <= 0)) throw new Error(`BENCH_LATENCY_RATES must be comma-separated payments a second, got "${process.env.BENCH_LATENCY_RATES}"`);
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

// ---- the bare sender: node:http posting signed bodies, keep-alive, CONCURRENCY in flight -------
async function bareSender(): Promise<void> {
  const url = new URL(process.env.BARE_URL!);
  const secret = process.env.BARE_SECRET!;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  let done = 0;
  let stopping = false;
  let sequence = 0;
  const post = () => new Promise<void>((resolve, reject) => {
    sequence += 1;
    const id = `evt_bare_${process.pid}_${sequence}`;
    const body = JSON.stringify({
      object: 'webhook_trigger', event_id: id, trigger: 'processing_status',
      triggered_on: { id: `acct_bare_${sequence}`, object: 'processing_account', value: 'active' }, created_at: new Date().toISOString().slice(0, 19).replace('T', ' '),
    });
    const timestamp = Math.floor(Date.now() / 1000);
    const request = http.request(url, {
      method: 'POST', agent,
      headers: {
        'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-bench-bare': '1',
        'x-service-signature': serviceSignature(secret, body), 'x-service-event-id': id,
        'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': standardWebhooksSignature(secret, id, timestamp, body),
      },
    }, (response) => {
      response.resume();
      response.on('end', () => {
        done += 1;
        resolve();
      });
    });
    request.on('error', reject);
    request.end(body);
  });
  const loop = async () => {
    while (!stopping) await post();
  };
  const loops = Array.from({ length: Number(process.env.WORKER_CONCURRENCY) || 32 }, loop);
  const report = setInterval(() => process.send!({ done, at: epochNow() }), 100);
  process.on('SIGTERM', () => {
    stopping = true;
    clearInterval(report);
    Promise.allSettled(loops).finally(() => process.exit(0));
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

function startChild(name: string, args: string[], env: Record<string, string>, ipc = false, onOutput?: (text: string) => void): ChildProcess {
  const profileName = `webhooks-${name}-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`;
  const profile = process.env.BENCH_PROFILE && name === 'worker' ? ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', profileName] : [];
  const child = spawn(process.execPath, [...profile, ...args], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ipc ? ['ignore', 'inherit', 'inherit', 'ipc'] : ['ignore', onOutput ? 'pipe' : 'inherit', 'inherit'],
  });
  // Its log (stdout), read by the caller as it passes through.
  child.stdout?.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk);
    onOutput!(chunk.toString('utf8'));
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

/**
 * With DATABASE_URL (a server on this machine), the bench database's own backends: their pids,
 * listed every 100 ms from pg_stat_activity, and the CPU each had when last read (a backend that
 * exits keeps its last reading). The server's shared processes (WAL writer, checkpointer) and
 * other databases' backends are not counted.
 */
const backendCpu = new Map<number, number>();

function trackBackends(url: string, database: string): () => Promise<void> {
  const client = new pg.Client({ connectionString: url });
  let stopping = false;
  const loop = (async () => {
    await client.connect();
    while (!stopping) {
      const found = await client.query('select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [database]).catch(() => ({ rows: [] }));
      for (const { pid } of found.rows as Array<{ pid: number }>) {
        const used = cpuSeconds(pid);
        if (!Number.isNaN(used)) backendCpu.set(pid, used);
      }
      await sleep(100);
    }
    await client.end();
  })();
  return async () => {
    stopping = true;
    await loop;
  };
}

function postgresCpuSeconds(): number {
  if (!postmasterPid) {
    if (backendCpu.size === 0) return NaN;
    let total = 0;
    for (const [pid, last] of backendCpu) {
      const now = cpuSeconds(pid);
      if (!Number.isNaN(now) && now >= last) backendCpu.set(pid, now);
      total += backendCpu.get(pid)!;
    }
    return total;
  }
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
  /** existing rows of the tenant (events, deliveries and logs each) */
  rows: number;
  phase: string;
  system: 'settle' | 'anchor' | 'bare';
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
  /** this process: the receiver (the sender's and the drain's requests all end here) */
  receiverCpuCores: number;
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
  let receiverAtWindowStart = 0;
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
      receiverAtWindowStart = ownCpuSeconds();
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
    receiverCpuCores: (ownCpuSeconds() - receiverAtWindowStart) / elapsed,
    machineCpuCores: (machineBusySeconds() - machineAtWindowStart) / elapsed,
  };
  // Drain, so the next phase starts from an empty queue.
  const drainUntil = Date.now() + 300_000;
  while (options.done() - baseline < produced && Date.now() < drainUntil) await sleep(20);
  if (options.done() - baseline < produced) throw new Error(`drain: ${produced - (options.done() - baseline)} still outstanding after 300 s`);
  return measured;
}

/**
 * The drain phase: `count` events already committed with no worker running; `start` launches the
 * worker. Measured from its first receipt (start-up excluded) to its last; the worker is stopped after.
 */
async function drainBacklog(count: number, done: () => number, start: () => ChildProcess): Promise<Measured> {
  const baseline = done();
  const worker = start();
  const until = Date.now() + 600_000;
  while (done() === baseline && Date.now() < until) await sleep(2);
  const first = { at: performance.now(), done: done(), worker: cpuSeconds(worker.pid), postgres: postgresCpuSeconds(), receiver: ownCpuSeconds(), machine: machineBusySeconds() };
  while (done() - baseline < count && Date.now() < until) await sleep(2);
  if (done() - baseline < count) throw new Error(`drain: ${count - (done() - baseline)} still outstanding after 600 s`);
  const elapsed = (performance.now() - first.at) / 1000;
  const measured: Measured = {
    donePerSec: (done() - first.done) / elapsed,
    workerCpuCores: (cpuSeconds(worker.pid) - first.worker) / elapsed,
    postgresCpuCores: (postgresCpuSeconds() - first.postgres) / elapsed,
    receiverCpuCores: (ownCpuSeconds() - first.receiver) / elapsed,
    machineCpuCores: (machineBusySeconds() - first.machine) / elapsed,
  };
  await stopChild(worker);
  return measured;
}

function table(head: string[], rows: Array<Array<string | number>>): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

// ---- where Postgres spends a phase (BENCH_PG_STATS=1) ------------------------------------------
/**
 * For the max phase: WAL written per delivery (records, full-page images, bytes: pg_stat_wal),
 * buffers each table and index touched (pg_statio, hits and reads from outside shared_buffers)
 * per delivery, and what the database's backends were doing, sampled
 * every 10 ms from pg_stat_activity (statement heads and wait events, busy backends only).
 */
async function startPgStats(db: Db, url: string) {
  const statio = async () => new Map((await db.raw(
    `select relname as name, coalesce(heap_blks_hit, 0) as hit, coalesce(heap_blks_read, 0) as read from pg_statio_user_tables
     union all select indexrelname, idx_blks_hit, idx_blks_read from pg_statio_user_indexes
     union all select 'graphile_worker.' || relname, coalesce(heap_blks_hit, 0), coalesce(heap_blks_read, 0) from pg_statio_all_tables where schemaname = 'graphile_worker'`))
    .rows.map((r: { name: string; hit: string; read: string }) => [r.name, { hit: Number(r.hit), read: Number(r.read) }]));
  // WAL syncs are the flushes commits wait for (and the WAL writer's own); commits are the bench database's alone.
  const walStats = async () => (await db.raw(`select wal_records, wal_fpi, wal_bytes, wal_sync,
      (select xact_commit from pg_stat_database where datname = current_database()) as xact_commit from pg_stat_wal`)).rows[0] as Record<string, string>;
  // Rows written, by table: inserts, updates (of which heap-only: no index entry written) and deletes.
  const writes = async () => new Map((await db.raw(
    `select case when schemaname = 'public' then relname else schemaname || '.' || relname end as name,
            n_tup_ins as ins, n_tup_upd as upd, n_tup_hot_upd as hot, n_tup_del as del
       from pg_stat_all_tables where schemaname in ('public', 'graphile_worker')`))
    .rows.map((r: Record<string, string>) => [r.name, { ins: Number(r.ins), upd: Number(r.upd), hot: Number(r.hot), del: Number(r.del) }]));
  const before = await statio();
  const writesBefore = await writes();
  const walBefore = await walStats();
  const sampler = new pg.Client({ connectionString: url });
  await sampler.connect();
  const database = new URL(url).pathname.slice(1);
  const samples = new Map<string, number>();
  let sampling = true;
  let rounds = 0;
  const loop = (async () => {
    while (sampling) {
      const found = await sampler.query(
        `select coalesce(wait_event_type || ':' || wait_event, 'CPU') as wait, regexp_replace(left(query, 70), '\\s+', ' ', 'g') as head
           from pg_stat_activity where datname = $1 and state = 'active' and pid <> pg_backend_pid()`, [database]);
      rounds += 1;
      for (const row of found.rows) samples.set(`${row.wait} | ${row.head}`, (samples.get(`${row.wait} | ${row.head}`) ?? 0) + 1);
      await sleep(10);
    }
  })();
  return {
    async report(delivered: number): Promise<string> {
      sampling = false;
      await loop;
      await sampler.end();
      // A backend reports its table counters at most once a second.
      await sleep(1500);
      const after = await statio();
      const writesAfter = await writes();
      const walAfter = await walStats();
      const wal = (name: string) => ((Number(walAfter[name]) - Number(walBefore[name])) / delivered).toFixed(name === 'wal_bytes' ? 0 : 2);
      const touched = [...after].map(([name, a]) => ({ name, hit: a.hit - (before.get(name)?.hit ?? 0), read: a.read - (before.get(name)?.read ?? 0) }))
        .filter((r) => r.hit + r.read > 0).sort((x, y) => y.hit + y.read - (x.hit + x.read)).slice(0, 15);
      const lines = [`pg stats for ${delivered} deliveries (WAL figures are the whole server's: with DATABASE_URL, other databases' too)`,
        `WAL per delivery: ${wal('wal_records')} records, ${wal('wal_fpi')} full-page images, ${wal('wal_bytes')} bytes, ${wal('wal_sync')} syncs (flushes);`
          + ` commits of the bench database per delivery: ${wal('xact_commit')}`,
        'buffers per delivery (hit + read from outside shared_buffers):',
        ...touched.map((r) => `  ${((r.hit + r.read) / delivered).toFixed(2).padStart(7)}  (read ${(r.read / delivered).toFixed(3)})  ${r.name}`),
        'rows written per delivery (inserted, updated of which heap-only, deleted):',
        ...[...writesAfter].map(([name, w]) => {
          const b = writesBefore.get(name) ?? { ins: 0, upd: 0, hot: 0, del: 0 };
          const per = (n: number) => (n / delivered).toFixed(2);
          return { name, total: w.ins - b.ins + w.upd - b.upd + w.del - b.del, text: `  ins ${per(w.ins - b.ins)}  upd ${per(w.upd - b.upd)} (hot ${per(w.hot - b.hot)})  del ${per(w.del - b.del)}  ${name}` };
        }).filter((r) => r.total > 0).sort((x, y) => y.total - x.total).map((r) => r.text),
        `busy backends, ${rounds} samples (average backends per sample):`,
        ...[...samples].sort((x, y) => y[1] - x[1]).slice(0, 12).map(([k, n]) => `  ${(n / rounds).toFixed(2).padStart(5)}  ${k}`)];
      return lines.join('\n');
    },
  };
}

// ---- the tenant's existing rows ----------------------------------------------------------------
/** BENCH_ROWS: the tenant sizes the phases run at, in order (as bench/harness.ts dataSizes). */
function tenantSizes(): number[] {
  const raw = process.env.BENCH_ROWS ?? '10000,1000000';
  const sizes = raw.split(',').map((s) => Number(s.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n < 0)) throw new Error(`BENCH_ROWS must be comma-separated row counts, got "${raw}"`);
  return sizes;
}

/**
 * Grows the tenant to `rows` past events, each dispatched, delivered once and logged, by SQL in
 * batches of 100k (ids of the usual form, times spread over the past), then vacuums and analyses
 * the three tables, as months of traffic under autovacuum leave them. Returns the ms it took.
 */
async function growTenant(db: Db, tenant: EventTenant, webhookId: string, rows: number): Promise<number> {
  const started = performance.now();
  const existing = Number((await db.raw(`select count(*) as n from events where org_id = ? and object_id like 'acct_grown_%'`, [tenant.orgId])).rows[0].n);
  for (let done = existing; done < rows; done += 100_000) {
    const count = Math.min(100_000, rows - done);
    // The rows reference each other correctly by construction: skip the per-row foreign-key checks.
    await db.transaction(async (tx) => {
      await tx.raw('set local session_replication_role = replica');
      await tx.raw(
        `with made as (
           select 'evt_' || substr(md5(random()::text || g::text), 1, 24) as id, 'acct_grown_' || g as object_id,
                  now() - make_interval(secs => ${rows + 100} - g) as at
             from generate_series(?::int + 1, ?::int + ?::int) g),
         events_made as (
           insert into events (id, org_id, environment, trigger, object_type, object_id, value, created_at, dispatched_at)
           select id, ?, ?, 'processing_status', 'processing_account', object_id, jsonb_build_object('id', object_id, 'status', 'active'), at, at
             from made returning id, created_at),
         deliveries_made as (
           insert into webhook_deliveries (id, org_id, environment, webhook_id, event_id, state, attempts, next_attempt_at, created_at, finished_at)
           select 'whd_' || substr(md5(?::text || id), 1, 24), ?, ?, ?, id, 'delivered', 1, created_at, created_at, created_at from events_made returning event_id, created_at)
         insert into webhook_logs (id, org_id, environment, data, created_at, modified_at)
         select 'whl_' || substr(md5(random()::text || event_id), 1, 24), ?, ?,
                jsonb_build_object('webhook_id', ?::text, 'event_id', event_id, 'trigger', 'processing_status', 'url', 'http://127.0.0.1/hook',
                                   'http_status', 200, 'attempt', 1, 'duration_ms', 2, 'response', '', 'error', null, 'next_attempt_at', null),
                created_at, created_at
           from deliveries_made`,
        [done, done, count, tenant.orgId, tenant.environment, webhookId, tenant.orgId, tenant.environment, webhookId, tenant.orgId, tenant.environment, webhookId]);
    });
  }
  // The grown events count as dispatched, as months of traffic leave them: the dispatch position
  // moves past them (every event of earlier phases has been delivered by now).
  await db.raw('update webhook_dispatch_position set dispatched = pg_current_snapshot(), window_snapshot = null, window_after_txid = null, window_after_seq = null');
  await db.raw('vacuum analyze events, webhook_deliveries, webhook_logs, webhook_dispatch_position');
  return performance.now() - started;
}

// ---- what an operator of `npm start` gets: the defaults ----------------------------------------
/** The worker settings TUNED sets, unset: each process runs with `npm start`'s defaults. */
const DEFAULT_SETTINGS: Record<string, string> = Object.fromEntries(Object.keys(TUNED).map((name) => [name, '']));
/** WORKER_CONCURRENCY's default: the bare sender's requests in flight beside a default worker. */
const DEFAULT_CONCURRENCY = '10';
/**
 * Deliveries each scale pass drains. 30,000: drained in 9–12 s here, so the first and last moments
 * (jobs picked up, the last ones retried) weigh little. At 9,000 (3 s) two runs of the same code
 * read 1.64× and 1.11× for two workers at 50 ms; at 30,000, 1.22× and 1.32×.
 */
const SCALE_BACKLOG = positive('BENCH_SCALE_BACKLOG', 30_000, true);
const SCALE_WORKERS = (process.env.BENCH_SCALE_WORKERS ?? '1,2,4').split(',').map(Number);
/** Deliveries per worker drained before the timed backlog is committed (BENCH_SCALE_WARMUP, default 1,500). */
const SCALE_WARMUP = positive('BENCH_SCALE_WARMUP', 1500, true);
/**
 * The receiver's answer delays the scale phase runs at (ms): 0, the machine's own ceiling; 50, a
 * receiver a little away; 400, each delivery holding its request long enough that one worker is
 * bounded by its requests in flight (its job slots and the companions they take along, about 200
 * for one org), not by the cores, so more workers show whether they share the backlog.
 */
const SCALE_DELAYS = (process.env.BENCH_SCALE_DELAYS ?? '0,50,400').split(',').map(Number);
/** BENCH_LATENCY=0 skips the defaults' latency phase (A/B runs of the drain and scale phases on a loaded machine). */
const LATENCY = process.env.BENCH_LATENCY !== '0';
const CARD = { type: 'card', card: { card_number: '4242424242424242', expiry: '12/35', card_code: '123' } };

interface DefaultsResult {
  rows: number;
  latency: LatencyResult | null;
  drainPerSec: number;
  /** CPU ms per delivery of the drain: the worker process, the bench database's backends, the receiver */
  drainCpu: { workerMs: number; postgresMs: number; receiverMs?: number };
  /** the bare sender's rate: the mean of its runs before and after the drain (bareRuns) */
  barePerSec: number;
  bareRuns?: [before: number, after: number];
  /** CPU ms per request of the bare sender's two runs together: the sender process, the receiver */
  bareCpu?: { senderMs: number; receiverMs: number };
  /** the cores busy (CPU s ÷ wall s) with the drain's three processes, and with the bare loop's two */
  coresBusy?: { drain: number; bare: number };
  scale: ScaleResult[];
  load: string;
}

interface DefaultsContext {
  db: Db;
  benchUrl: string;
  vaultKey: string;
  receiverUrl: string;
  /** commits `count` processing_status events of the bench tenant, none timed */
  produceEvents: (count: number) => Promise<number>;
  received: () => number;
  duplicates: () => number;
  /** commits `count` processing_status events of the bench tenant in one transaction: a backlog that appears at once */
  produceBacklog: (count: number) => Promise<void>;
  /** the receiver answers each request this many ms after reading it (keep-alive either way) */
  receiverDelayMs: (ms: number) => void;
  /** while `collecting` (the latency phase), each delivery's receipt time by the id of the object it is about */
  receipts: { collecting: boolean; byObject: Map<string, number[]>; byEvent: Map<string, number> };
  /** each webhook's sender_secret by its id, so the receiver checks a delivery against its own webhook's */
  secrets: Map<string, string>;
}

/** A web process (`node api/server.ts`, as `npm start` runs it) on a free loopback port, once it answers. */
async function startWebChild(env: Record<string, string>, authorization: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  // No reporting process runs beside it: its request log is not kept for one (REPORTING_URL=off).
  const child = startChild('web', [...WEB_NODE_FLAGS, path.join(projectRoot, 'api/server.ts')], { ...env, PORT: String(port), HOST: '127.0.0.1', REPORTING_URL: 'off' });
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 30_000;
  for (;;) {
    const answered = await fetch(`${url}/transactions?limit=1`, { headers: { authorization } }).then((r) => r.status, () => 0);
    if (answered === 200) return { url, child };
    if (Date.now() > until) throw new Error(`the web process did not answer (last status ${answered})`);
    await sleep(100);
  }
}

/**
 * Latency under the defaults: one org with two webhooks (triggers `payment` and `processed`), card
 * payments through a web process at LOW_RATE a second for SECONDS (after the warm-up), one worker;
 * from each payment's 2xx to the receipt of each of its deliveries.
 */
let latencyPhases = 0;

interface LatencyResult {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  samples: number;
  missing: number;
  paymentsPerSec: number;
  deferred: number;
  /** payment requests that failed (not timed): answered other than 200, or not at all (a connection reset on a loaded machine) */
  failed: number;
  /** the failed ones by kind: `HTTP <status>`, or the error code of one that got no answer */
  failedBy: Record<string, number>;
}

/** How a payment request of the latency phase failed: its answer's status, or the code of the error that left it unanswered. */
function failureKind(error: unknown): string {
  const status = (error as { status?: unknown }).status;
  if (typeof status === 'number') return `HTTP ${status}`;
  const cause = (error as { cause?: { code?: unknown } }).cause;
  return typeof cause?.code === 'string' ? cause.code : 'no answer';
}

/** `failed` with its kinds: `12 failed (HTTP 429: 10, ECONNRESET: 2)`. */
function failures(result: LatencyResult, noun: string): string {
  const kinds = Object.entries(result.failedBy).map(([kind, count]) => `${kind}: ${count}`).join(', ');
  return `${result.failed} ${noun}${kinds ? ` (${kinds})` : ''}`;
}

async function latencyPhase(ctx: DefaultsContext, env: Record<string, string>, rate: number): Promise<LatencyResult> {
  // An org of its own each time: the webhooks of an earlier size's phase must not receive this one's events.
  const key = await benchKey(ctx.db, `bench-latency-${++latencyPhases}`);
  const authorization = `Basic ${Buffer.from(`${key.secret}:`).toString('base64')}`;
  const web = await startWebChild(env, authorization);
  const post = async (route: string, body: unknown) => {
    const response = await fetch(`${web.url}${route}`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const json = (await response.json()) as { id?: string; sender_secret?: string };
    if (response.status !== 200 || !json.id) throw Object.assign(new Error(`POST ${route}: ${response.status} ${JSON.stringify(json)}`), { status: response.status });
    return json as { id: string; sender_secret?: string };
  };
  await post('/processing_accounts', { name: 'Bench Latency' });
  for (const trigger of ['payment', 'processed']) {
    const webhook = await post('/webhooks', { trigger, url: ctx.receiverUrl });
    ctx.secrets.set(webhook.id, webhook.sender_secret!);
  }
  const metricsPort = await freePort();
  const worker = startChild('worker', [path.join(projectRoot, 'workers/main.ts')], { ...env, WORKER_METRICS_PORT: String(metricsPort), HOST: '127.0.0.1' });
  const up = Date.now() + 30_000;
  while (Number((await ctx.db('worker_heartbeats').count({ n: '*' }))[0].n) === 0 && Date.now() < up) await sleep(50);
  ctx.receipts.byObject.clear();
  ctx.receipts.byEvent.clear();
  ctx.receipts.collecting = true;
  const paidAt = new Map<string, number>();
  const sent: Array<Promise<void>> = [];
  const start = performance.now();
  const windowStart = start + WARMUP_SECONDS * 1000;
  const end = windowStart + SECONDS * 1000;
  let timed = 0;
  let failed = 0;
  const failedBy: Record<string, number> = {};
  let carry = 0;
  for (let tick = 0; start + tick * TICK_MS < end; tick++) {
    const inWindow = start + tick * TICK_MS >= windowStart;
    carry += (rate * TICK_MS) / 1000;
    for (; carry >= 1; carry -= 1) {
      sent.push(post('/transactions', { type: 'payment', amount: 10, payment_method: CARD }).then((payment) => {
        if (inWindow) paidAt.set(payment.id, performance.now());
      }, (error: unknown) => {
        failed += 1;
        const kind = failureKind(error);
        failedBy[kind] = (failedBy[kind] ?? 0) + 1;
        if (failed === 1) process.stderr.write(`(a payment request failed: ${String(error)}) `);
      }));
      if (inWindow) timed += 1;
    }
    const wait = start + (tick + 1) * TICK_MS - performance.now();
    if (wait > 0) await sleep(wait);
  }
  await Promise.all(sent);
  const paymentsPerSec = timed / SECONDS;
  const expected = paidAt.size * 2;
  const arrived = () => [...paidAt.keys()].reduce((sum, id) => sum + (ctx.receipts.byObject.get(id)?.length ?? 0), 0);
  const until = Date.now() + 60_000;
  while (arrived() < expected && Date.now() < until) await sleep(50);
  ctx.receipts.collecting = false;
  const values = [...paidAt].flatMap(([id, at]) => (ctx.receipts.byObject.get(id) ?? []).map((receipt) => receipt - at)).sort((a, b) => a - b);
  // Deliveries the worker put off (deferred to a later job) rather than sent when their turn came.
  const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text(), () => '');
  const deferred = [...metrics.matchAll(/^settle_webhook_deferrals_total\{[^}]*\} (\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
  await stopChild(worker);
  await stopChild(web.child);
  if (TIMELINE) process.stderr.write(`\n${await deliveryTimeline(ctx, key.orgId, paidAt)}\n`);
  return {
    p50Ms: percentile(values, 0.5), p99Ms: percentile(values, 0.99), maxMs: values.at(-1) ?? NaN, samples: values.length, missing: expected - values.length, paymentsPerSec, deferred, failed, failedBy,
  };
}

/** BENCH_TIMELINE=1: the latency phase prints where each delivery's time went (deliveryTimeline). */
const TIMELINE = process.env.BENCH_TIMELINE === '1';

/**
 * Keeps each delivery job's times as graphile-worker deletes it (done): when it was made, when a
 * worker locked it. Only for BENCH_TIMELINE, as it adds a write per job.
 */
async function keepJobTimes(db: Db): Promise<void> {
  await db.raw(`
    create table if not exists bench_job_times (key text, created_at timestamptz, locked_at timestamptz, done_at timestamptz);
    create or replace function bench_keep_job_time() returns trigger language plpgsql as $$
    begin
      insert into bench_job_times values (old.key, old.created_at, old.locked_at, clock_timestamp());
      return old;
    end $$;
    drop trigger if exists bench_keep_job_time on graphile_worker._private_jobs;
    create trigger bench_keep_job_time before delete on graphile_worker._private_jobs for each row execute function bench_keep_job_time();`);
}

/**
 * Each delivery's way from its payment's 2xx to its receipt, in steps read from the rows (all on
 * this machine's clock): dispatched (its dispatch pass began: the delivery's created_at), taken (a
 * worker locked its job, from bench_job_times), opened (its attempt logged in flight), received
 * (by the receiver here), recorded (its answer written). p50 and p99 of each step, and the mean of
 * each over the slowest 1 % of deliveries: which step the tail is made of.
 */
async function deliveryTimeline(ctx: DefaultsContext, orgId: string, paidAt: Map<string, number>): Promise<string> {
  const epoch = (at: number) => performance.timeOrigin + at;
  const found = await rows<{ object_id: string; event_id: string; dispatched: number; taken: number | null; opened: number | null; recorded: number | null }>(ctx.db,
    `select e.object_id, e.id as event_id, extract(epoch from d.created_at) * 1000 as dispatched, extract(epoch from j.locked_at) * 1000 as taken,
            extract(epoch from l.created_at) * 1000 as opened, extract(epoch from l.modified_at) * 1000 as recorded
       from events e join webhook_deliveries d on d.event_id = e.id
       left join webhook_logs l on l.id = ${attemptLogId('d.id', "'1'")}
       left join lateral (select locked_at from bench_job_times t where t.key = 'deliver:' || d.id order by done_at limit 1) j on true
      where e.org_id = ? and e.object_id = any(?::text[])`, [orgId, [...paidAt.keys()]]);
  const steps = ['dispatched', 'taken', 'opened', 'received', 'recorded'] as const;
  const timelines = found.flatMap((row) => {
    const paid = paidAt.get(row.object_id);
    const received = ctx.receipts.byEvent.get(row.event_id);
    if (paid === undefined || received === undefined || row.taken === null || row.opened === null || row.recorded === null) return [];
    const at = [epoch(paid), Number(row.dispatched), Number(row.taken), Number(row.opened), epoch(received), Number(row.recorded)];
    return [{ total: at[4] - at[0], gaps: steps.map((_, i) => at[i + 1] - at[i]) }];
  });
  const slowest = [...timelines].sort((a, b) => b.total - a.total).slice(0, Math.max(1, Math.ceil(timelines.length / 100)));
  const lines = steps.map((step, i) => {
    const values = timelines.map((t) => t.gaps[i]).sort((a, b) => a - b);
    const tail = slowest.reduce((sum, t) => sum + t.gaps[i], 0) / slowest.length;
    return `  → ${step.padEnd(10)} p50 ${percentile(values, 0.5).toFixed(1).padStart(7)}  p99 ${percentile(values, 0.99).toFixed(1).padStart(7)}  mean in the slowest 1 %: ${tail.toFixed(1).padStart(7)}`;
  });
  return [`timeline of ${timelines.length} deliveries (of ${found.length}), ms from the step before (paid → dispatched: the 2xx to the dispatch pass's start):`, ...lines].join('\n');
}

/** Where the bench database's backends wait, sampled every 100 ms while `running` holds: the top waits by count of samples. */
function sampleWaits(db: Db, database: string): { stop: () => Promise<string> } {
  const waits = new Map<string, number>();
  let samples = 0;
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      const found = await rows<{ wait: string; n: number }>(db,
        `select coalesce(wait_event_type || ':' || wait_event, 'cpu') || coalesce(' ' || left(regexp_replace(query, '\\s+', ' ', 'g'), 60), '') as wait, count(*)::int as n
           from pg_stat_activity where datname = ? and state = 'active' and pid <> pg_backend_pid() and wait_event_type in ('Lock', 'LWLock', 'IO', 'IPC')
          group by 1`, [database]).catch(() => []);
      samples += 1;
      for (const { wait, n } of found) waits.set(wait, (waits.get(wait) ?? 0) + n);
      await sleep(100);
    }
  })();
  return {
    stop: async () => {
      stopping = true;
      await loop;
      const top = [...waits].sort((a, b) => b[1] - a[1]).slice(0, 5);
      return top.length ? top.map(([wait, n]) => `${(n / samples).toFixed(2)} × ${wait}`).join('; ') : 'none';
    },
  };
}

/** One pass of the scale phase: a backlog drained by `workers` processes, the receiver answering after `delayMs`. */
interface ScaleResult {
  workers: number;
  delayMs: number;
  perSec: number;
  duplicates: number;
  released: number;
  lockedBefore: number;
  deferred: number;
  /** deliveries each worker made */
  shares: number[];
  /** attempts' mean time from sending to the answer, and the share of them past a second */
  attemptMs: number;
  overOneSecond: number;
  /** seconds the last 5 % of the backlog took */
  lastPartS: number;
  /** transactions the bench database committed per delivery (the bench's own sampling adds about 20 a second) */
  commitsPerDelivery: number;
  cpuMs: { worker: number; postgres: number };
  /** wall seconds from the first receipt to the last, and CPU seconds used meanwhile by each part */
  wallS: number;
  cpuS: { workers: number; postgres: number; receiver: number };
  /** (workers + postgres + receiver) CPU s ÷ (wall s × cores): 1 is every core busy with this drain */
  utilisation: number;
  /** every process on the machine (other users of it too), busy CPU s ÷ (wall s × cores) */
  machineUtilisation: number;
  waits: string;
  load: string;
}

/**
 * The most `workers` processes can drain against one, on this machine: one worker's drain kept
 * `utilisation` of the cores busy (its own process, the database's backends and the receiver), so
 * with the same CPU a delivery the cores allow 1 ÷ `utilisation` times its rate, and `workers`
 * processes at most `workers` times it.
 */
function scaleCeiling(workers: number, utilisation: number): number {
  return Math.min(workers, 1 / utilisation);
}

/** CPU seconds (user + system) this process has used: the receiver's, with the bench's own bookkeeping. */
const ownCpuSeconds = () => {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1e6;
};

/**
 * The same backlog drained by 1, 2 and 4 worker processes (BENCH_SCALE_WORKERS) with the
 * defaults, started together, SCALE_BACKLOG events committed at once when all are up and have
 * drained a warm-up backlog (BENCH_SCALE_WARMUP per worker), for each receiver delay of
 * BENCH_SCALE_DELAYS: the rate from the first receipt to the last, each worker's share of it, the duplicates the receiver saw,
 * the jobs they released from processes they found silent (their log) beside the jobs left locked
 * before they started, where their database backends waited (lock and I/O waits, mean backends
 * per sample), and the CPU seconds the workers, the bench database's backends and the receiver
 * used over the drain's wall time, as a share of the machine's cores: near 1, the machine bounds
 * the rate, and more processes can only share the same cores.
 */
async function scalePhase(ctx: DefaultsContext, env: Record<string, string>, database: string, delayMs: number): Promise<ScaleResult[]> {
  const results: ScaleResult[] = [];
  ctx.receiverDelayMs(delayMs);
  for (const count of SCALE_WORKERS) {
    const duplicatesBefore = ctx.duplicates();
    // Jobs an earlier phase's stopped worker left locked: releasing those is releasing a stopped process.
    const lockedBefore = Number((await ctx.db.raw('select count(*) as n from graphile_worker.jobs where locked_at is not null')).rows[0].n);
    let released = 0;
    const onOutput = (text: string) => {
      for (const line of text.split('\n')) if (line.includes('released the jobs of silent worker processes')) released += Number(/jobs"?[:=]\s*(\d+)/.exec(line)?.[1] ?? 1);
    };
    const ports = await Promise.all(Array.from({ length: count }, () => freePort()));
    const workers = ports.map((port) => startChild('worker', [path.join(projectRoot, 'workers/main.ts')], { ...env, WORKER_METRICS_PORT: String(port), HOST: '127.0.0.1' }, false, onOutput));
    // Every worker up (its heartbeat in) before the backlog appears, in one commit: on a loaded
    // machine a process takes seconds to start, and a drain begun by the first one up would time
    // the others' start-up as theirs.
    const up = Date.now() + 60_000;
    const beating = async () => Number((await ctx.db.raw(`select count(*) as n from worker_heartbeats where seen_at > now() - interval '5 seconds'`)).rows[0].n);
    while (await beating() < count && Date.now() < up) await sleep(50);
    const metrics = () => Promise.all(ports.map((port) => fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text(), () => '')));
    const counted = (text: string, pattern: RegExp) => [...text.matchAll(pattern)].reduce((n, m) => n + Number(m[1]), 0);
    // What the workers counted so far: deliveries by worker, deferrals, and their attempts' times (sent to answered).
    const workerCounts = async () => {
      const texts = await metrics();
      const all = (pattern: RegExp) => texts.reduce((sum, text) => sum + counted(text, pattern), 0);
      return {
        shares: texts.map((text) => counted(text, /^settle_webhook_deliveries_total\{outcome="delivered"\} (\d+)/gm)),
        deferred: all(/^settle_webhook_deferrals_total\{[^}]*\} (\d+)/gm),
        attempts: all(/^settle_webhook_delivery_duration_seconds_count\{outcome="delivered"\} (\d+)/gm),
        attemptSeconds: all(/^settle_webhook_delivery_duration_seconds_sum\{outcome="delivered"\} ([\d.e+-]+)/gm),
        withinOneSecond: all(/^settle_webhook_delivery_duration_seconds_bucket\{le="1",outcome="delivered"\} (\d+)/gm),
      };
    };
    // Warm: each process's first deliveries pay for compiling its delivery path, a cost N
    // processes pay N times over; a backlog that appears later finds every worker as a running
    // deployment's are.
    const warmedFrom = ctx.received();
    await ctx.produceBacklog(SCALE_WARMUP * count);
    const warm = Date.now() + 300_000;
    while (ctx.received() - warmedFrom < SCALE_WARMUP * count && Date.now() < warm) await sleep(20);
    const before = await workerCounts();
    const baseline = ctx.received();
    await ctx.produceBacklog(SCALE_BACKLOG);
    const until = Date.now() + 600_000;
    while (ctx.received() === baseline && Date.now() < until) await sleep(2);
    const waits = sampleWaits(ctx.db, database);
    // A worker that exits keeps its last reading (its /proc entry is gone by the end).
    const workerLast = new Map<number, number>();
    const workerCpu = () => workers.reduce((sum, worker) => {
      const now = cpuSeconds(worker.pid);
      if (!Number.isNaN(now)) workerLast.set(worker.pid!, now);
      return sum + (workerLast.get(worker.pid!) ?? 0);
    }, 0);
    const commits = async () => Number((await ctx.db.raw('select xact_commit from pg_stat_database where datname = current_database()')).rows[0].xact_commit);
    const first = { at: performance.now(), done: ctx.received(), worker: workerCpu(), postgres: postgresCpuSeconds(), receiver: ownCpuSeconds(), machine: machineBusySeconds(), commits: await commits() };
    // The last 5 % alone: deliveries deferred or retried come back late, and stretch the drain.
    let at95 = NaN;
    while (ctx.received() - baseline < SCALE_BACKLOG && Date.now() < until) {
      if (Number.isNaN(at95) && ctx.received() - baseline >= SCALE_BACKLOG * 0.95) at95 = performance.now();
      await sleep(2);
    }
    const received = ctx.received() - first.done;
    const wallS = (performance.now() - first.at) / 1000;
    const lastPartS = Number.isNaN(at95) ? 0 : wallS - (at95 - first.at) / 1000;
    const cpuS = { workers: workerCpu() - first.worker, postgres: postgresCpuSeconds() - first.postgres, receiver: ownCpuSeconds() - first.receiver };
    const commitsPerDelivery = (await commits() - first.commits) / received;
    const cores = os.cpus().length;
    const utilisation = (cpuS.workers + cpuS.postgres + cpuS.receiver) / (wallS * cores);
    const machineUtilisation = (machineBusySeconds() - first.machine) / (wallS * cores);
    const perSec = received / wallS;
    const cpuMs = { worker: (cpuS.workers / received) * 1000, postgres: (cpuS.postgres / received) * 1000 };
    const waited = await waits.stop();
    const after = await workerCounts();
    // Deliveries the workers put off (a later job) rather than sent when their turn came.
    const deferred = after.deferred - before.deferred;
    // Each worker's share of the deliveries: a worker that waits on another's turn delivers less.
    const shares = after.shares.map((n, i) => n - before.shares[i]!);
    // An attempt's time includes its wait in line at the receiver and in the worker's event loop:
    // requests in flight ÷ rate. Past a second, an attempt detaches (a watch job) as if hanging.
    const attempts = after.attempts - before.attempts;
    const attemptMs = ((after.attemptSeconds - before.attemptSeconds) / attempts) * 1000;
    const overOneSecond = (attempts - (after.withinOneSecond - before.withinOneSecond)) / attempts;
    await Promise.all(workers.map(stopChild));
    if (ctx.received() - baseline < SCALE_BACKLOG) throw new Error(`scale ${count}: ${SCALE_BACKLOG - (ctx.received() - baseline)} still outstanding after 600 s`);
    const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    results.push({
      workers: count, delayMs, perSec, duplicates: ctx.duplicates() - duplicatesBefore, released, lockedBefore, deferred, shares, commitsPerDelivery, lastPartS, attemptMs, overOneSecond, cpuMs, wallS, cpuS, utilisation, machineUtilisation, waits: waited, load,
    });
    process.stderr.write(`defaults, receiver answering after ${delayMs} ms: ${count} worker(s) drained ${SCALE_BACKLOG} at ${perSec.toFixed(0)}/s in ${wallS.toFixed(1)} s (the last 5 % in ${lastPartS.toFixed(1)} s);`
      + ` CPU s workers ${cpuS.workers.toFixed(1)}, postgres ${cpuS.postgres.toFixed(1)}, receiver ${cpuS.receiver.toFixed(1)} = ${(utilisation * 100).toFixed(0)} % of ${cores} cores`
      + ` (machine ${(machineUtilisation * 100).toFixed(0)} %); deliveries by worker ${shares.join('/')}; ${commitsPerDelivery.toFixed(2)} commits per delivery; attempts ${attemptMs.toFixed(0)} ms on average, ${(overOneSecond * 100).toFixed(1)} % past 1 s; ${deferred} deferred; lock/IO waits ${waited}; load ${load}\n`);
  }
  ctx.receiverDelayMs(0);
  return results;
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
  if (!postmasterPid) cleanups.push(trackBackends(benchUrl, database));

  const db: Db = createDb(benchUrl, 4);
  cleanups.push(() => db.destroy());
  const key = await benchKey(db, 'bench');
  const tenant: EventTenant = { orgId: key.orgId, environment: 'test' };
  const vaultKey = randomBytes(32).toString('base64');

  // ---- the receiver: answers 200, timestamps each event's arrival --------------------------------
  const committedAt = new Map<string, number>();
  let latencies: number[] = [];
  let received = 0;
  let bareReceived = 0;
  let duplicates = 0;
  let badSignatures = 0;
  let verified = 0;
  const secrets = new Map<string, string>();
  const seen = new Set<string>();
  const receipts: DefaultsContext['receipts'] = { collecting: false, byObject: new Map(), byEvent: new Map() };
  let answerDelayMs = 0;
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const at = performance.now();
      // One receipt per event and webhook: each webhook of the drain's trigger has its own path.
      const id = req.url === '/hook' ? req.headers['x-service-event-id'] as string : `${req.headers['x-service-event-id']} ${req.url}`;
      if (answerDelayMs > 0) setTimeout(() => res.writeHead(200).end(), answerDelayMs);
      else res.writeHead(200).end();
      if (seen.has(id)) {
        duplicates += 1;
        return;
      }
      seen.add(id);
      if (receipts.collecting) {
        const objectId = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { triggered_on?: { id?: string } }).triggered_on?.id ?? '';
        receipts.byObject.set(objectId, [...(receipts.byObject.get(objectId) ?? []), at]);
        receipts.byEvent.set(id, at);
      }
      if (req.headers['x-bench-bare'] === '1') {
        bareReceived += 1;
        return;
      }
      received += 1;
      const committed = committedAt.get(id);
      if (committed !== undefined) {
        latencies.push(at - committed);
        committedAt.delete(id);
      }
      // Signed, byte for byte: check one in 50 (checking all would load this process, not Settle).
      if (received % 50 === 1) {
        verified += 1;
        const body = Buffer.concat(chunks);
        const secret = secrets.get((JSON.parse(body.toString('utf8')) as { webhook_id?: string }).webhook_id ?? '') ?? '';
        if (!verifyServiceSignature(secret, body, req.headers['x-service-signature'] as string)) badSignatures += 1;
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
  const webhook = (await response.json()) as { id?: string; sender_secret?: string };
  for (let more = 2; more <= DRAIN_WEBHOOKS; more++) {
    const made = await fetch(`${web.url}/webhooks`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${key.secret}:`).toString('base64')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ trigger: 'processing_status', url: `${receiverUrl}/${more}` }),
    });
    const another = (await made.json()) as { id?: string; sender_secret?: string };
    if (made.status !== 200 || !another.id || !another.sender_secret) throw new Error(`creating webhook ${more}: ${made.status} ${JSON.stringify(another)}`);
    secrets.set(another.id, another.sender_secret);
  }
  await web.stop();
  if (response.status !== 200 || !webhook.id || !webhook.sender_secret) throw new Error(`creating the webhook: ${response.status} ${JSON.stringify(webhook)}`);
  const secret = webhook.sender_secret;
  secrets.set(webhook.id, secret);

  const workerEnv = { ...SETTINGS, DATABASE_URL: benchUrl, LOG_LEVEL: 'warn', WEBHOOK_ALLOW_PRIVATE: 'true', SETTLE_VAULT_KEY: vaultKey };
  fs.mkdirSync(profileDir, { recursive: true });
  const webhookId = String((await db('webhooks').where({ org_id: tenant.orgId }).first()).id);

  const results: PhaseResult[] = [];
  const loadAverage = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const loadBefore = loadAverage();
  const loads: Record<number, { before: string; after: string }> = {};
  let logged = 0;
  let sequence = 0;
  let batch = 0;

  const defaultsEnv = { ...DEFAULT_SETTINGS, DATABASE_URL: benchUrl, LOG_LEVEL: 'warn', WEBHOOK_ALLOW_PRIVATE: 'true', SETTLE_VAULT_KEY: vaultKey };
  const defaultsContext: DefaultsContext = {
    db, benchUrl, vaultKey, receiverUrl, receipts, produceEvents: (count) => produceEvents(count, false), received: () => received, duplicates: () => duplicates, secrets,
    receiverDelayMs: (ms) => void (answerDelayMs = ms),
    produceBacklog: (count) => db.transaction(async (tx) => {
      for (let committed = 0; committed < count; committed += MAX_BATCH) await recordEvents(tx, tenant, eventDrafts(Math.min(MAX_BATCH, count - committed)));
    }),
  };
  const defaults: DefaultsResult[] = [];

  console.error(`settings: ${Object.entries(SETTINGS).map(([k, v]) => `${k}=${v}`).join(' ')}; load average ${loadBefore}`);
  const eventDrafts = (count: number) => Array.from({ length: count }, () => {
    sequence += 1;
    return { trigger: PROCESSING_STATUS_TRIGGER, objectType: 'processing_account', objectId: `acct_bench_${sequence}`, value: { id: `acct_bench_${sequence}`, status: 'active' } };
  });
  const produceEvents = async (count: number, inWindow: boolean): Promise<number> => {
    const drafts = eventDrafts(count);
    const ids = await db.transaction((tx) => recordEvents(tx, tenant, drafts));
    const at = performance.now();
    if (inWindow) for (const id of ids) if (!seen.has(id)) committedAt.set(id, at);
    return ids.length;
  };
  for (const size of tenantSizes()) {
    process.stderr.write(`tenant grown to ${size} events, deliveries and logs in `);
    const grownIn = await growTenant(db, tenant, webhookId, size);
    process.stderr.write(`${(grownIn / 1000).toFixed(1)} s; load average ${loadAverage()}\n`);
    loads[size] = { before: loadAverage(), after: '' };
    const phaseResult = (system: PhaseResult['system'], phase: string, rate: number | null, measured: Measured, values: number[]): PhaseResult => {
      const sorted = values.sort((x, y) => x - y);
      const result: PhaseResult = {
        rows: size, phase, system, offeredPerSec: rate, donePerSec: measured.donePerSec,
        p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99), maxMs: sorted.at(-1) ?? NaN, samples: sorted.length,
        workerCpuCores: measured.workerCpuCores, postgresCpuCores: measured.postgresCpuCores, machineCpuCores: measured.machineCpuCores,
      };
      results.push(result);
      process.stderr.write(`${result.donePerSec.toFixed(0)}/s, p50 ${result.p50Ms.toFixed(1)} ms, p99 ${result.p99Ms.toFixed(1)} ms, worker CPU ${(result.workerCpuCores * 100).toFixed(0)} %\n`);
      return result;
    };

    // ---- what `npm start` gives: latency, drain beside the bare sender, 1/2/4 workers -----------
    if (ONLY === 'scale') {
      const scale: ScaleResult[] = [];
      for (const delay of SCALE_DELAYS) scale.push(...await scalePhase(defaultsContext, defaultsEnv, database, delay));
      defaults.push({ rows: size, latency: null, drainPerSec: NaN, drainCpu: { workerMs: NaN, postgresMs: NaN }, barePerSec: NaN, scale, load: loadAverage() });
    }
    if (ONLY === '' || ONLY === 'defaults' || ONLY === 'latency') {
      let latency: LatencyResult | null = null;
      if (TIMELINE) await keepJobTimes(db);
      for (const rate of LATENCY ? LATENCY_RATES : []) {
        process.stderr.write(`${size} rows, defaults latency at ${rate}/s: `);
        latency = await latencyPhase(defaultsContext, defaultsEnv, rate);
        process.stderr.write(`${latency.paymentsPerSec.toFixed(0)} payments/s, p50 ${latency.p50Ms.toFixed(1)} ms, p99 ${latency.p99Ms.toFixed(1)} ms, ${latency.missing} missing, ${latency.deferred} deferred, ${failures(latency, 'failed')}; load ${loadAverage()}\n`);
      }
      if (ONLY === 'latency') continue;
      // The bare sender runs before the drain and again after it: a shared machine's speed drifts,
      // and the bare loop's rate with it, so the drain is set beside the mean of the two runs
      // that bracket it.
      const bareRun = async () => {
        const bare = startChild('bare-sender', [path.join(projectRoot, 'bench/webhooks.ts')],
          { ...defaultsEnv, WORKER_CONCURRENCY: DEFAULT_CONCURRENCY, BENCH_ROLE: 'bare-sender', BARE_URL: receiverUrl, BARE_SECRET: secret }, true);
        const measured = await drive({ rate: null, produce: () => sleep(5).then(() => 0), done: () => bareReceived, workerPid: bare.pid });
        await stopChild(bare);
        return measured;
      };
      process.stderr.write(`${size} rows, defaults drain of ${DRAIN}: bare sender (${DEFAULT_CONCURRENCY} in flight) before it: `);
      const bareBefore = await bareRun();
      process.stderr.write(`${bareBefore.donePerSec.toFixed(0)}/s; drain: `);
      for (let committed = 0; committed < DRAIN; committed += MAX_BATCH) await produceEvents(Math.min(MAX_BATCH, DRAIN - committed), false);
      const stats = PG_STATS ? await startPgStats(db, benchUrl) : null;
      const receivedBefore = received;
      const drain = await drainBacklog(DRAIN * DRAIN_WEBHOOKS, () => received, () => startChild('worker', [path.join(projectRoot, 'workers/main.ts')], defaultsEnv));
      if (stats) console.error(await stats.report(received - receivedBefore));
      const drainCpu = {
        workerMs: (drain.workerCpuCores / drain.donePerSec) * 1000, postgresMs: (drain.postgresCpuCores / drain.donePerSec) * 1000,
        receiverMs: (drain.receiverCpuCores / drain.donePerSec) * 1000,
      };
      process.stderr.write(`${drain.donePerSec.toFixed(0)}/s (CPU ms per delivery: worker ${drainCpu.workerMs.toFixed(2)}, postgres ${drainCpu.postgresMs.toFixed(2)});`
        + ' bare sender after it: ');
      const bareAfter = await bareRun();
      process.stderr.write(`${bareAfter.donePerSec.toFixed(0)}/s\n`);
      // The two runs together: each one's CPU a request, weighted by its rate (equal windows).
      const bareRate = bareBefore.donePerSec + bareAfter.donePerSec;
      const bareCpu = {
        senderMs: ((bareBefore.workerCpuCores + bareAfter.workerCpuCores) / bareRate) * 1000,
        receiverMs: ((bareBefore.receiverCpuCores + bareAfter.receiverCpuCores) / bareRate) * 1000,
      };
      const coresBusy = {
        drain: drain.workerCpuCores + drain.postgresCpuCores + drain.receiverCpuCores,
        bare: (bareBefore.workerCpuCores + bareBefore.receiverCpuCores + bareAfter.workerCpuCores + bareAfter.receiverCpuCores) / 2,
      };
      const scale: ScaleResult[] = [];
      if (SCALE_BACKLOG > 0) for (const delay of SCALE_DELAYS) scale.push(...await scalePhase(defaultsContext, defaultsEnv, database, delay));
      defaults.push({ rows: size, latency, drainPerSec: drain.donePerSec, drainCpu, barePerSec: bareRate / 2,
        bareRuns: [bareBefore.donePerSec, bareAfter.donePerSec], bareCpu, coresBusy, scale, load: loadAverage() });
    }

    // ---- Settle ---------------------------------------------------------------------------------
    if (ONLY !== 'anchor' && ONLY !== 'defaults' && ONLY !== 'scale') {

      const settlePhase = async (phase: string, rate: number | null, worker: ChildProcess) => {
        process.stderr.write(`${size} rows, settle ${phase}: `);
        latencies = [];
        committedAt.clear();
        const measured = await drive({ rate, produce: produceEvents, done: () => received, workerPid: worker.pid });
        return phaseResult('settle', phase, rate, measured, latencies);
      };
      if (ONLY !== 'drain') {
        const worker = startChild('worker', [path.join(projectRoot, 'workers/main.ts')], workerEnv);
        const up = Date.now() + 30_000;
        while (Number((await db('worker_heartbeats').count({ n: '*' }))[0].n) === 0 && Date.now() < up) await sleep(50);
        await settlePhase(`${LOW_RATE}/s`, LOW_RATE, worker);
        const stats = PG_STATS ? await startPgStats(db, benchUrl) : null;
        const receivedBefore = received;
        const max = await settlePhase('max', null, worker);
        if (stats) console.error(await stats.report(received - receivedBefore));
        await settlePhase('80% of max', Math.round(max.donePerSec * 0.8), worker);
        await stopChild(worker);
      }
      if (DRAIN > 0) {
        process.stderr.write(`${size} rows, settle drain of ${DRAIN}: `);
        for (let committed = 0; committed < DRAIN; committed += MAX_BATCH) await produceEvents(Math.min(MAX_BATCH, DRAIN - committed), false);
        const stats = PG_STATS ? await startPgStats(db, benchUrl) : null;
        const receivedBefore = received;
        phaseResult('settle', 'drain', null, await drainBacklog(DRAIN, () => received, () => startChild('worker', [path.join(projectRoot, 'workers/main.ts')], workerEnv)), []);
        if (stats) console.error(await stats.report(received - receivedBefore));
      }
      logged = Number((await db('webhook_logs').count({ n: '*' }))[0].n) - size;
    }

    // ---- the anchors: graphile-worker no-op jobs, same database and settings; the bare sender ---
    if (ONLY !== 'settle' && ONLY !== 'defaults' && ONLY !== 'scale') {
      if (ONLY !== 'drain') {
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
          process.stderr.write(`${size} rows, anchor ${phase}: `);
          const first = batch;
          const measured = await drive({ rate, produce: produceJobs, done: () => anchorDone, workerPid: anchor.pid });
          const values = await new Promise<number[]>((resolve) => {
            pendingLatencies.push(resolve);
            anchor.send({ latencies: { from: first, to: batch } });
          });
          return phaseResult('anchor', phase, rate, measured, values);
        };
        await anchorPhase(`${LOW_RATE}/s`, LOW_RATE);
        await anchorPhase('max', null);
        await stopChild(anchor);
      }

      // The bare sender runs for the window; nothing to produce or drain.
      process.stderr.write(`${size} rows, bare sender max: `);
      const bare = startChild('bare-sender', [path.join(projectRoot, 'bench/webhooks.ts')], { ...workerEnv, BENCH_ROLE: 'bare-sender', BARE_URL: receiverUrl, BARE_SECRET: secret }, true);
      const measured = await drive({ rate: null, produce: () => sleep(5).then(() => 0), done: () => bareReceived, workerPid: bare.pid });
      await stopChild(bare);
      phaseResult('bare', 'max', null, measured, []);
    }
    loads[size].after = loadAverage();
  }

  // ---- report ---------------------------------------------------------------------------------
  const loadAfter = loadAverage();
  const SYSTEMS: Record<PhaseResult['system'], string> = {
    settle: 'settle: signed deliveries', anchor: 'anchor: graphile-worker no-op jobs', bare: 'anchor: bare node:http sender',
  };
  for (const d of defaults) {
    console.log(`\nwebhooks with npm start's defaults, ${d.rows} rows (load average at the end ${d.load}; figures need a quiet machine):`);
    if (d.latency) {
      console.log(`  latency: ${d.latency.paymentsPerSec.toFixed(0)} card payments/s to one org with two webhooks (payment, processed), payment's 2xx → receipt:`
        + ` p50 ${d.latency.p50Ms.toFixed(1)} ms, p99 ${d.latency.p99Ms.toFixed(1)} ms, max ${d.latency.maxMs.toFixed(1)} ms`
        + ` (${d.latency.samples} deliveries, ${d.latency.missing} missing, ${d.latency.deferred} deferred, ${failures(d.latency, 'payment requests failed')}; target p99 < 100 ms)`);
    }
    if (!Number.isNaN(d.drainPerSec)) {
      const bareRuns = d.bareRuns ? ` (the mean of ${d.bareRuns[0].toFixed(0)}/s before the drain and ${d.bareRuns[1].toFixed(0)}/s after it)` : '';
      console.log(`  drain of ${DRAIN * DRAIN_WEBHOOKS} queued deliveries${DRAIN_WEBHOOKS > 1 ? ` (${DRAIN} events to ${DRAIN_WEBHOOKS} webhooks)` : ''} by one worker: ${d.drainPerSec.toFixed(0)}/s beside the bare signed keep-alive POST loop's ${d.barePerSec.toFixed(0)}/s${bareRuns}`
        + ` = ${(d.drainPerSec / d.barePerSec).toFixed(3)} (target >= 0.3); CPU ms per delivery: worker ${d.drainCpu.workerMs.toFixed(2)}, postgres ${d.drainCpu.postgresMs.toFixed(2)}`);
      if (d.bareCpu && d.coresBusy && d.drainCpu.receiverMs !== undefined) {
        // The ratio is the two costs' ratio times the two shares of the cores each kept busy.
        const drainMs = d.drainCpu.workerMs + d.drainCpu.postgresMs + d.drainCpu.receiverMs;
        const bareMs = d.bareCpu.senderMs + d.bareCpu.receiverMs;
        console.log(`    what the ratio is made of: a delivery cost ${drainMs.toFixed(3)} CPU ms (worker, postgres, receiver ${d.drainCpu.receiverMs.toFixed(3)}),`
          + ` a bare request ${bareMs.toFixed(3)} (sender ${d.bareCpu.senderMs.toFixed(3)}, receiver ${d.bareCpu.receiverMs.toFixed(3)}): ${(bareMs / drainMs).toFixed(3)} of it;`
          + ` the drain kept ${d.coresBusy.drain.toFixed(2)} cores busy, the bare loop ${d.coresBusy.bare.toFixed(2)} (${(d.coresBusy.drain / d.coresBusy.bare).toFixed(2)}×)`);
      }
    }
    if (d.scale.length) {
      console.log(`  scale: ${SCALE_BACKLOG} queued deliveries drained by N workers started together; utilisation = CPU s of the workers, the bench database's backends and the receiver`
        + ` ÷ (wall s × ${os.cpus().length} cores); machine = every process on it (other users too); targets: 2 workers >= 1.6 × one, 4 >= 2.5 × one where the cores allow`);
      console.log('  ceiling = the ratio N workers reach if a delivery costs the machine the CPU it cost with one and every core is busy: N, or the cores ÷ the CPU one worker\'s drain kept busy (its utilisation), whichever is less');
      console.log(table(['receiver delay', 'workers', `drain of ${SCALE_BACKLOG}/s`, 'ratio to one', 'ceiling', 'wall s (last 5 %)', 'CPU s workers + postgres + receiver', 'utilisation', 'machine',
        'CPU ms/delivery (workers + postgres)', 'commits/delivery', 'attempt ms (share past 1 s)', 'deliveries by worker', 'deferred', 'duplicates', 'jobs released from silent processes', 'jobs locked before', 'load', 'backends waiting (mean per sample)'],
      d.scale.map((s) => {
        const one = d.scale.find((o) => o.workers === 1 && o.delayMs === s.delayMs);
        return [`${s.delayMs} ms`, s.workers, s.perSec.toFixed(0), one ? (s.perSec / one.perSec).toFixed(2) : '', one ? scaleCeiling(s.workers, one.utilisation).toFixed(2) : '', `${s.wallS.toFixed(1)} (${s.lastPartS.toFixed(1)})`,
          `${s.cpuS.workers.toFixed(1)} + ${s.cpuS.postgres.toFixed(1)} + ${s.cpuS.receiver.toFixed(1)}`, `${(s.utilisation * 100).toFixed(0)} %`, `${(s.machineUtilisation * 100).toFixed(0)} %`,
          `${s.cpuMs.worker.toFixed(2)} + ${s.cpuMs.postgres.toFixed(2)}`, s.commitsPerDelivery.toFixed(2), `${s.attemptMs.toFixed(0)} (${(s.overOneSecond * 100).toFixed(1)} %)`, s.shares.join('/'), s.deferred, s.duplicates, s.released, s.lockedBefore, s.load, s.waits];
      })));
    }
  }
  console.log(`\nwebhooks: one worker process, ${SECONDS} s per phase (after ${WARMUP_SECONDS} s warm-up), backlog ${BACKLOG} at max, Node ${process.version}, ${os.cpus().length} CPUs`);
  console.log(`database: ${process.env.DATABASE_URL ? 'server (DATABASE_URL)' : 'embedded'}; settings: ${Object.entries(SETTINGS).map(([k, v]) => `${k}=${v}`).join(' ')}`);
  console.log(`load average before ${loadBefore}, after ${loadAfter}${Object.entries(loads).map(([size, l]) => `; ${size} rows: ${l.before} → ${l.after}`).join('')}.`);
  console.log('CPU: cores used in the window by the worker process, by the Postgres server (embedded only), and by every process');
  console.log('on the machine; CPU ms/item = (worker + postgres) CPU per item done.\n');
  console.log(table(
    ['rows', 'phase', 'system', 'offered/s', 'done/s', 'p50 ms', 'p99 ms', 'max ms', 'worker CPU', 'postgres CPU', 'CPU ms/item', 'machine CPU'],
    results.map((r) => [
      r.rows, r.phase, SYSTEMS[r.system],
      r.offeredPerSec ?? (r.phase === 'drain' ? `${DRAIN} waiting` : `backlog ${BACKLOG}`), r.donePerSec.toFixed(0), r.p50Ms.toFixed(1), r.p99Ms.toFixed(1), r.maxMs.toFixed(1),
      `${(r.workerCpuCores * 100).toFixed(0)} %`, `${(r.postgresCpuCores * 100).toFixed(0)} %`,
      (((r.workerCpuCores + r.postgresCpuCores) / r.donePerSec) * 1000).toFixed(2), `${(r.machineCpuCores * 100).toFixed(0)} %`,
    ]),
  ));
  const find = (size: number, system: PhaseResult['system'], phase: string) => results.find((r) => r.rows === size && r.system === system && r.phase === phase);
  const summary: Record<string, unknown> = {};
  const sizes = [...new Set(results.map((r) => r.rows))];
  for (const size of sizes) {
    const low = find(size, 'settle', `${LOW_RATE}/s`);
    const max = find(size, 'settle', 'max');
    const anchorMax = find(size, 'anchor', 'max');
    const bareMax = find(size, 'bare', 'max');
    const drain = find(size, 'settle', 'drain');
    if (drain) {
      const perDelivery = ((drain.workerCpuCores + drain.postgresCpuCores) / drain.donePerSec) * 1000;
      const drainOfBare = bareMax ? ` = ${(drain.donePerSec / bareMax.donePerSec).toFixed(3)} of the bare sender's ${bareMax.donePerSec.toFixed(0)}/s (target >= 0.15)` : '';
      console.log(`\n${size} rows: drain of a ${DRAIN}-event backlog by one worker ${drain.donePerSec.toFixed(0)}/s, ${perDelivery.toFixed(2)} CPU ms per delivery${drainOfBare}`);
    }
    if (!max || !low) continue;
    const throughput = max.donePerSec >= 1500 && badSignatures === 0 ? 'PASS' : 'MISS';
    const latency = low.p99Ms < 100 ? 'PASS' : 'MISS';
    const ofAnchor = anchorMax ? `${((max.donePerSec / anchorMax.donePerSec) * 100).toFixed(1)} % of the no-op anchor's ${anchorMax.donePerSec.toFixed(0)}/s` : '';
    const ofBare = bareMax ? `${((max.donePerSec / bareMax.donePerSec) * 100).toFixed(1)} % of the bare sender's ${bareMax.donePerSec.toFixed(0)}/s` : '';
    console.log(`\n${size} rows: ${max.donePerSec.toFixed(0)} deliveries/s at max${ofAnchor || ofBare ? ` = ${[ofAnchor, ofBare].filter(Boolean).join(', ')}` : ''}`);
    console.log(`  targets: >= 1500 deliveries/s at max: ${throughput} (${max.donePerSec.toFixed(0)}); p99 commit-to-receipt < 100 ms at ${LOW_RATE}/s: ${latency} (${low.p99Ms.toFixed(1)} ms)`);
    summary[size] = { throughput, latency, deliveriesPerSec: max.donePerSec, p99MsAt200: low.p99Ms, drainPerSec: drain?.donePerSec, anchorPerSec: anchorMax?.donePerSec, barePerSec: bareMax?.donePerSec };
  }
  if (sizes.length > 1) {
    const first = find(sizes[0]!, 'settle', 'max');
    const last = find(sizes.at(-1)!, 'settle', 'max');
    if (first && last) console.log(`\n${sizes.at(-1)} rows / ${sizes[0]} rows at max: ${((last.donePerSec / first.donePerSec) * 100).toFixed(0)} % (target >= 90 %)`);
  }
  console.log(`receiver: ${received} events, ${duplicates} duplicates, ${verified} signatures checked, ${badSignatures} bad; ${logged} attempt logs written (all sizes)`);

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
    database: process.env.DATABASE_URL ? 'server' : 'embedded',
    loadAverageBySize: loads,
    targets: { deliveriesPerSec: 1500, p99MsAt200: 100, largeOverSmall: 0.9 },
    results,
    defaults,
    receiver: { received, duplicates, verified, badSignatures, bare: bareReceived },
    attemptLogs: logged,
    summary,
  }, null, 2)}\n`);
  console.log(`\nresults: ${path.relative(projectRoot, resultsFile)}`);
}

if (process.env.BENCH_ROLE === 'noop-worker') {
  await noopWorker();
} else if (process.env.BENCH_ROLE === 'bare-sender') {
  await bareSender();
} else {
  try {
    await main();
  } finally {
    await cleanup();
  }
  process.exit(0);
}
