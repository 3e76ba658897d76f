/**
 * `node bench/webhooks-health.ts`: what CONTRACT §19 costs, on real worker processes
 * (`node workers/main.ts`, children) delivering to a loopback receiver in this process.
 *
 * - Replay vs drain: BENCH_REPLAY events (default 100,000) missed by a disabled webhook are
 *   replayed (`POST /webhooks/{id}/resend {since, until, only_missed: true}`, then one worker
 *   drains them), against the same worker draining a fresh backlog of as many events committed
 *   while no worker ran (the dispatcher turning each into a delivery as it goes). Each runs from
 *   its start (the resend request, or the worker's launch) to the last receipt, the worker's
 *   start-up included in both. Goal: replay ≥ 0.9 of the fresh drain rate.
 * - Rate-limit accuracy: a webhook limited to 10/s gets a burst of BENCH_BURST events (default
 *   700, over 60 s of its limit) delivered by 4 worker processes; receipts per second over 60 s.
 *   Goal: 10 ± 1 in each second.
 *
 * BENCH_PHASES=replay|limit runs one of them. Tenant size: the replay phases run at each size of BENCH_ROWS (default 10000): the tenant's
 * history grown to that many past events, each delivered once, before them.
 *
 * Postgres: DATABASE_URL (a server; default postgres://postgres@127.0.0.1:5432/postgres): a fresh
 * database is created, migrated and dropped afterwards. Results: stdout and
 * bench/results/webhooks-health.json.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { loadConfig, projectRoot } from '../api/config.ts';
import { adminQuery, databaseUrl } from '../api/db/admin.ts';
import { createDb, type Db } from '../api/db/connection.ts';
import { recordEvents, type EventTenant, type Trigger } from '../api/db/events.ts';
import { migrate } from '../api/db/migrate.ts';
import { startWeb } from '../api/server.ts';
import { positive } from './harness.ts';
import { benchKey } from './keys.ts';
import { ENTITY_STATUS_TRIGGER } from '../api/families/entities/triggers.ts';
import { INTENT_STATUS_TRIGGER } from '../api/families/intents/triggers.ts';
import { TRANSACTION_OPERATION_TRIGGER } from '../api/families/transaction_operations/triggers.ts';

const SERVER = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REPLAY = positive('BENCH_REPLAY', 100_000);
const BURST = positive('BENCH_BURST', 700);
/** BENCH_PHASES: which to run, default both */
const PHASES = (process.env.BENCH_PHASES ?? 'replay,limit').split(',');
const LIMIT = 10;
const LIMIT_SECONDS = 60;
const WORKER_ENV = { WORKER_CONCURRENCY: '32', WORKER_LOCAL_QUEUE: '64', WORKER_COMPLETE_BATCH_MS: '2', WORKER_POLL_INTERVAL: '250' };

const cleanups: Array<() => Promise<void>> = [];

/** Paths the receiver counts, with each receipt's time. */
const receipts = new Map<string, number[]>();

async function startReceiver(): Promise<string> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const at = performance.now();
      const list = receipts.get(req.url ?? '') ?? [];
      list.push(at);
      receipts.set(req.url ?? '', list);
      res.writeHead(200).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

interface Worker {
  child: ChildProcess;
  stop: () => Promise<void>;
}

function startWorker(url: string, env: Record<string, string> = {}): Worker {
  const child = spawn(process.execPath, [path.join(projectRoot, 'workers/main.ts')], {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: url, WEBHOOK_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'warn', ...WORKER_ENV, ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };
  cleanups.push(stop);
  return { child, stop };
}

async function until(check: () => Promise<boolean> | boolean, what: string, ms = 900_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `count` events of `trigger`, committed in transactions of 1,000 through the one event writer. */
async function commitEvents(db: Db, tenant: EventTenant, trigger: Trigger, count: number, tag: string): Promise<void> {
  for (let done = 0; done < count; done += 1000) {
    const n = Math.min(1000, count - done);
    await db.transaction((tx) => recordEvents(tx, tenant, Array.from({ length: n }, (_, i) => ({
      trigger, objectType: 'entity', objectId: `ent_${tag}_${done + i}`, value: 'verified' as unknown as Record<string, unknown>,
    }))));
  }
}

/**
 * Grows the tenant to `rows` past events (a trigger no phase uses, times a day and more ago), each
 * delivered once to a webhook of its own, moves the dispatch position past them and vacuums.
 */
async function growHistory(db: Db, tenant: EventTenant, webhookId: string, rows: number): Promise<void> {
  for (let done = 0; done < rows; done += 100_000) {
    const count = Math.min(100_000, rows - done);
    await db.transaction(async (tx) => {
      await tx.raw('set local session_replication_role = replica');
      await tx.raw(
        `with made as (
           insert into events (id, org_id, environment, trigger, object_type, object_id, value, created_at)
           select 'evt_history_' || g, ?, ?, 'payment_link:status', 'payment_link', 'pay_history_' || g, '"active"', now() - interval '1 day' - make_interval(secs => g)
             from generate_series(?::int + 1, ?::int + ?::int) g
           returning id, created_at)
         insert into webhook_deliveries (id, org_id, environment, webhook_id, event_id, state, attempts, created_at, finished_at)
         select 'whd_' || substr(md5(id), 1, 24), ?, ?, ?, id, 'delivered', 1, created_at, created_at from made`,
        [tenant.orgId, tenant.environment, done, done, count, tenant.orgId, tenant.environment, webhookId]);
    });
  }
  await db.raw('update webhook_dispatch_position set dispatched = pg_current_snapshot(), window_snapshot = null, window_after_txid = null, window_after_seq = null');
  await db.raw('vacuum analyze events, webhook_deliveries, webhook_logs');
}

async function count(db: Db, sql: string, bindings: unknown[]): Promise<number> {
  return Number((await db.raw(sql, bindings)).rows[0].n);
}

interface Api {
  request: (method: string, route: string, body?: unknown) => Promise<any>;
}

function apiClient(url: string, key: string): Api {
  return {
    request: async (method, route, body) => {
      const res = await fetch(url + route, {
        method,
        headers: { Authorization: `Basic ${Buffer.from(`${key}:`).toString('base64')}`, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const answer = await res.json();
      if (res.status !== 200) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(answer)}`);
      return answer;
    },
  };
}

/** The fresh drain: events committed with no worker running, then one worker started; launch to last receipt. */
async function freshDrain(db: Db, url: string, api: Api, receiver: string, tenant: EventTenant, size: number): Promise<number> {
  const route = `/fresh-${size}`;
  const hook = await api.request('POST', '/webhooks', { trigger: 'entity:status', url: receiver + route });
  await commitEvents(db, tenant, ENTITY_STATUS_TRIGGER, REPLAY, `fresh${size}`);
  const started = performance.now();
  const worker = startWorker(url);
  await until(() => (receipts.get(route)?.length ?? 0) >= REPLAY, 'the fresh backlog');
  const seconds = (receipts.get(route)!.at(-1)! - started) / 1000;
  await worker.stop();
  await api.request('PUT', `/webhooks/${hook.id}`, { status: 'disabled' });
  return REPLAY / seconds;
}

/** The replay: events a disabled webhook missed (recorded skipped), then resend only_missed and one worker started. */
async function replay(db: Db, url: string, api: Api, receiver: string, tenant: EventTenant, size: number): Promise<{ rate: number; resendSeconds: number }> {
  const route = `/replay-${size}`;
  const hook = await api.request('POST', '/webhooks', { trigger: 'intent:status', url: receiver + route });
  await api.request('PUT', `/webhooks/${hook.id}`, { status: 'disabled' });
  const since = (await db.raw(`select to_char(now() at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') as t`)).rows[0].t;
  const dispatcher = startWorker(url);
  await commitEvents(db, tenant, INTENT_STATUS_TRIGGER, REPLAY, `replay${size}`);
  await until(async () => (await count(db, `select count(*) as n from webhook_deliveries where webhook_id = ? and state = 'skipped'`, [hook.id])) >= REPLAY, 'skipped deliveries');
  await dispatcher.stop();
  await api.request('PUT', `/webhooks/${hook.id}`, { status: 'active' });
  const started = performance.now();
  const answer = await api.request('POST', `/webhooks/${hook.id}/resend`, { since, only_missed: true });
  const resendSeconds = (performance.now() - started) / 1000;
  if (answer.events !== REPLAY) throw new Error(`the resend took ${answer.events} events, not ${REPLAY}`);
  const worker = startWorker(url);
  await until(() => (receipts.get(route)?.length ?? 0) >= REPLAY, 'the replay');
  const seconds = (receipts.get(route)!.at(-1)! - started) / 1000;
  await worker.stop();
  await api.request('PUT', `/webhooks/${hook.id}`, { status: 'disabled' });
  return { rate: REPLAY / seconds, resendSeconds };
}

/** A burst to a webhook limited to 10/s with 4 workers: receipts in each of 60 whole seconds from the first. */
async function rateLimitAccuracy(db: Db, url: string, api: Api, receiver: string, tenant: EventTenant): Promise<number[]> {
  const route = '/limited';
  const hook = await api.request('POST', '/webhooks', { trigger: 'transaction:operation', url: receiver + route, rate_limit: LIMIT });
  const workers = Array.from({ length: 4 }, () => startWorker(url, { WORKER_CONCURRENCY: '10', WORKER_LOCAL_QUEUE: '0' }));
  await commitEvents(db, tenant, TRANSACTION_OPERATION_TRIGGER, BURST, 'burst');
  await until(() => (receipts.get(route)?.length ?? 0) > 0, 'the first limited delivery');
  const first = receipts.get(route)![0];
  await new Promise((resolve) => setTimeout(resolve, (LIMIT_SECONDS + 1) * 1000 - (performance.now() - first)));
  const perSecond = Array.from({ length: LIMIT_SECONDS }, (_, s) => receipts.get(route)!.filter((at) => at - first >= s * 1000 && at - first < (s + 1) * 1000).length);
  await api.request('PUT', `/webhooks/${hook.id}`, { status: 'disabled' });
  await Promise.all(workers.map((w) => w.stop()));
  return perSecond;
}

async function main(): Promise<void> {
  const name = `settle_bench_health_${process.pid}`;
  await adminQuery(SERVER, `create database ${name}`);
  cleanups.push(() => adminQuery(SERVER, `drop database if exists ${name} with (force)`));
  const url = databaseUrl(SERVER, name);
  await migrate(url);
  const config = loadConfig({ ...process.env, DATABASE_URL: url, PORT: '0', LOG_LEVEL: 'warn', SETTLE_RATE_LIMIT: 'off' });
  const web = await startWeb(config);
  cleanups.push(() => web.stop());
  const db = createDb(url, 4);
  cleanups.push(() => db.destroy());
  const key = await benchKey(db, 'bench');
  const api = apiClient(web.url, key.secret);
  const tenant: EventTenant = { orgId: key.orgId, environment: 'test' };
  const receiver = await startReceiver();
  const load = () => (fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);

  const sizes = (process.env.BENCH_ROWS ?? '10000').split(',').map(Number);
  const history = await api.request('POST', '/webhooks', { trigger: 'payment_link:status', url: `${receiver}/history` });
  await api.request('PUT', `/webhooks/${history.id}`, { status: 'disabled' });
  const results: Array<Record<string, unknown>> = [];
  for (const size of PHASES.includes('replay') ? sizes : []) {
    await growHistory(db, tenant, history.id, size);
    const fresh = await freshDrain(db, url, api, receiver, tenant, size);
    const replayed = await replay(db, url, api, receiver, tenant, size);
    const row = { rows: size, events: REPLAY, fresh_per_s: Math.round(fresh), replay_per_s: Math.round(replayed.rate), ratio: +(replayed.rate / fresh).toFixed(3), resend_request_s: +replayed.resendSeconds.toFixed(2), load: load() };
    console.log(JSON.stringify(row));
    results.push(row);
  }
  if (!PHASES.includes('limit')) return writeResults({ replay: results });
  const perSecond = await rateLimitAccuracy(db, url, api, receiver, tenant);
  const within = perSecond.filter((n) => Math.abs(n - LIMIT) <= 1).length;
  const limited = { limit: LIMIT, workers: 4, seconds: LIMIT_SECONDS, per_second: perSecond, min: Math.min(...perSecond), max: Math.max(...perSecond), within_one: `${within}/${LIMIT_SECONDS}`, load: load() };
  console.log(JSON.stringify(limited));
  writeResults({ replay: results, rateLimit: limited });
}

function writeResults(results: Record<string, unknown>): void {
  fs.mkdirSync(path.join(projectRoot, 'bench/results'), { recursive: true });
  fs.writeFileSync(path.join(projectRoot, 'bench/results/webhooks-health.json'), `${JSON.stringify({ at: new Date().toISOString(), ...results }, null, 2)}\n`);
}

try {
  await main();
} finally {
  for (const step of cleanups.reverse()) await step().catch((error: Error) => console.error('cleanup:', error.message));
}
process.exit(0);
