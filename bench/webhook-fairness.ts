/**
 * How long one org's next webhook delivery waits while other orgs' receivers never answer, with
 * the worker's default settings (WORKER_CONCURRENCY, WEBHOOK_TENANT_CONCURRENCY, the default
 * retry schedule) and WEBHOOK_TIMEOUT 4 s, in one or more worker processes.
 *
 * Per load level: `orgs` other orgs each with `hooks` webhooks to a receiver that accepts the
 * connection and never answers, each org firing 2 events (so orgs × hooks × 2 hanging deliveries,
 * plus their retries); once they hang, the measured org fires one event every second for
 * BENCH_FAIRNESS_TRIALS trials, and the time from its create's answer to its receiver's request is
 * the latency. Goal (CONTRACT §19, issue 27): p100 ≤ 5 s at any number of hanging deliveries.
 *
 * Env: DATABASE_URL (else embedded), BENCH_FAIRNESS_WORKERS (default 2),
 * BENCH_FAIRNESS_TRIALS (default 10), BENCH_FAIRNESS_LEVELS (orgs×hooks, default "1x16,10x16").
 */
import http from 'node:http';
import { createDb } from '../api/db/connection.ts';
import { cleanup, positive, startChild, startServers } from './harness.ts';
import { benchKey } from './keys.ts';

const WORKERS = positive('BENCH_FAIRNESS_WORKERS', 2);
const TRIALS = positive('BENCH_FAIRNESS_TRIALS', 10);
const LEVELS = (process.env.BENCH_FAIRNESS_LEVELS ?? '1x16,10x16').split(',').map((level) => {
  const [orgs, hooks] = level.split('x').map(Number);
  if (!(orgs > 0 && hooks > 0)) throw new Error(`BENCH_FAIRNESS_LEVELS: "${level}" is not <orgs>x<hooks>`);
  return { orgs, hooks };
});

/** A receiver that takes requests and never answers (they end when the worker gives up). */
async function hangingReceiver() {
  const state = { requests: 0 };
  const server = http.createServer((req) => {
    state.requests += 1;
    req.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { state, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, close: () => { server.closeAllConnections(); server.close(); } };
}

/** A receiver that answers 200 at once and tells the time each event id arrived. */
async function fastReceiver() {
  const arrived = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        arrived.set(body.triggered_on?.id ?? body.id, at);
      } catch { /* not ours */ }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { arrived, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, close: () => { server.closeAllConnections(); server.close(); } };
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const env = await startServers('webhook-fairness', { WEBHOOK_ALLOW_PRIVATE: 'true' });
  const workerEnv = { DATABASE_URL: env.databaseUrl, LOG_LEVEL: 'warn', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT: '4s' };
  for (let i = 0; i < WORKERS; i++) startChild('webhook-fairness', `worker ${i + 1}`, 'workers/main.ts', workerEnv);
  const url = env.servers.settle;
  const db = createDb(env.databaseUrl, 2);
  const call = async (secret: string, route: string, json: unknown) => {
    const res = await fetch(url + route, { method: 'POST', headers: { Authorization: `Basic ${Buffer.from(`${secret}:`).toString('base64')}`, 'Content-Type': 'application/json' }, body: JSON.stringify(json) });
    const body = await res.json() as { id: string };
    if (res.status !== 200) throw new Error(`${route}: ${res.status} ${JSON.stringify(body)}`);
    return body;
  };
  const fast = await fastReceiver();
  await call(env.key.secret, '/webhooks', { trigger: 'processing_status', url: `${fast.url}/measured` });
  const hanging = await hangingReceiver();
  const results: Array<Record<string, number | string>> = [];
  let made = 0;
  for (const level of LEVELS) {
    for (; made < level.orgs; made++) {
      const other = await benchKey(db, `noisy_${made}`);
      for (let h = 0; h < level.hooks; h++) await call(other.secret, '/webhooks', { trigger: 'processing_status', url: `${hanging.url}/o${made}/h${h}` });
      for (let e = 0; e < 2; e++) await call(other.secret, '/processing_accounts', { name: `Noisy ${made}.${e}` });
    }
    const hangingDeliveries = level.orgs * level.hooks * 2;
    const deadline = Date.now() + 30_000;
    while (hanging.state.requests < Math.min(2 * level.orgs, hangingDeliveries) && Date.now() < deadline) await sleep(50);
    await sleep(1000);
    const latencies: number[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const created = await call(env.key.secret, '/processing_accounts', { name: `Measured ${trial}` });
      const started = Date.now();
      const until = started + 30_000;
      while (!fast.arrived.has(created.id) && Date.now() < until) await sleep(10);
      latencies.push((fast.arrived.get(created.id) ?? Infinity) - started);
      await sleep(1000);
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    const row = {
      'other orgs': level.orgs,
      'hanging deliveries': hangingDeliveries,
      'requests held so far': hanging.state.requests,
      'median ms': quantile(sorted, 0.5),
      'max ms': sorted[sorted.length - 1],
      goal: '≤ 5000 ms',
      verdict: sorted[sorted.length - 1] <= 5000 ? 'PASS' : 'FAIL',
    };
    results.push(row);
    console.log(JSON.stringify({ ...row, 'each trial ms': latencies }));
  }
  console.log(`\nwebhook fairness: ${WORKERS} worker process(es), default concurrency, WEBHOOK_TIMEOUT 4 s, ${TRIALS} trials per level (${process.env.DATABASE_URL ? 'PostgreSQL server' : 'embedded PostgreSQL'})`);
  console.table(results);
  await db.destroy();
  fast.close();
  hanging.close();
}

main().then(cleanup, async (error) => {
  console.error(error);
  await cleanup();
  process.exitCode = 1;
});
