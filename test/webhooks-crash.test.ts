/**
 * Webhook delivery when a worker process dies (`kill -9`), with real worker processes
 * (`node workers/main.ts`) and real loopback receivers:
 *
 * - a worker dies while it and another share a burst of payments: every event still arrives within
 *   WORKER_DEAD_AFTER + 30 s of the death, whatever deliveries the dead one had deferred;
 * - a worker dies while a request is out: the logs show that attempt, its outcome unknown, and the
 *   retry as attempt 2.
 *
 * WEBHOOK_CRASH_PAYMENTS changes the size of the burst (default 240).
 */
import http from 'node:http';
import t, { type Test } from 'tap';
import { startTestApi, type TestApi } from './helpers/api.ts';
import { spawnAnnouncedWorker, type SpawnedWorker } from './helpers/processes.ts';
import { eventually } from './helpers/wait.ts';

const PAYMENTS = Number(process.env.WEBHOOK_CRASH_PAYMENTS ?? 240);
const DEAD_AFTER_MS = 2000;
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };

interface Receipt {
  eventId: string;
  at: number;
}

/** A receiver that answers each request after `delayMs` (or holds it while `hold` says so), recording every receipt. */
async function startSlowReceiver(t: Test, delayMs: number, hold: (index: number) => boolean = () => false) {
  const state = { url: '', receipts: [] as Receipt[], firstAt: new Map<string, number>(), held: [] as http.ServerResponse[] };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const eventId = String(req.headers['x-service-event-id']);
      const at = Date.now();
      const index = state.receipts.push({ eventId, at }) - 1;
      if (!state.firstAt.has(eventId)) state.firstAt.set(eventId, at);
      if (hold(index)) return void state.held.push(res);
      setTimeout(() => res.writeHead(200).end('ok'), delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return state;
}

/** A worker process, once it has announced itself. */
function startedWorker(t: Test, api: TestApi, env: Record<string, string>): Promise<SpawnedWorker> {
  return spawnAnnouncedWorker(t, api.db, { DATABASE_URL: api.databaseUrl, WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_DEAD_AFTER: `${DEAD_AFTER_MS}ms`, LOG_LEVEL: 'warn', ...env });
}

async function kill(worker: SpawnedWorker): Promise<number> {
  worker.child.kill('SIGKILL');
  const at = Date.now();
  await worker.exited;
  return at;
}

/** `count` card payments through the API, `parallel` at a time. */
async function payments(api: TestApi, count: number, parallel: number): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < count) {
      next += 1;
      const res = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 10, payment_method: CARD } });
      if (res.status !== 200) throw new Error(`payment: ${res.status} ${JSON.stringify(res.body)}`);
    }
  }));
}

t.test('a worker killed half-way through a burst of payments: every event still arrives within WORKER_DEAD_AFTER + 30 s of the kill', { timeout: 180_000 }, async (t) => {
  const api = await startTestApi(t);
  t.equal((await api.request('POST', '/processing_accounts', { json: { name: 'Shop' } })).status, 200, 'processing account made');
  // Slower than a worker's patience for a slot (200 ms), so deliveries of the org are deferred as well as run.
  const receiver = await startSlowReceiver(t, 250);
  const webhook = await api.request('POST', '/webhooks', { json: { trigger: 'payment', url: receiver.url } });
  t.equal(webhook.status, 200, 'webhook made');
  // Four of each worker's ten jobs deliver for the org at once; the others defer.
  const env = { WEBHOOK_TENANT_CONCURRENCY: '4' };
  const first = await startedWorker(t, api, env);
  const second = await startedWorker(t, api, env);

  const paying = payments(api, PAYMENTS, 8);
  const half = await eventually(async () => receiver.firstAt.size, (n) => n >= PAYMENTS / 2, 120_000, 10);
  t.ok(half >= PAYMENTS / 2, `half the events arrived before the kill (${half})`);
  const killedAt = await kill(first);
  const atKill = receiver.firstAt.size;
  await paying;
  const events = (await api.db('events').where({ trigger: 'payment' }).select('id')).map((e: { id: string }) => e.id);
  t.equal(events.length, PAYMENTS, 'one payment event per payment');
  const [waiting] = (await api.db.raw(`select count(*)::int as n, coalesce(extract(epoch from max(run_at) - now()), 0)::float as ahead
    from graphile_worker.jobs where task_identifier = 'deliver_webhook' and run_at > now()`)).rows;
  t.comment(`${atKill} of ${PAYMENTS} delivered at the kill; once all were paid, ${waiting.n} delivery jobs waited for a later run_at, the farthest ${waiting.ahead.toFixed(1)} s ahead`);

  const deadline = killedAt + DEAD_AFTER_MS + 30_000;
  await eventually(async () => events.filter((id) => !receiver.firstAt.has(id)).length, (n) => n === 0, deadline - Date.now(), 50);
  const missing = events.filter((id) => !receiver.firstAt.has(id));
  const last = Math.max(...events.map((id) => receiver.firstAt.get(id) ?? Infinity));
  t.comment(`kill to last delivery: ${Number.isFinite(last) ? `${((last - killedAt) / 1000).toFixed(1)} s` : 'not all delivered'} (${PAYMENTS} payments, WORKER_DEAD_AFTER ${DEAD_AFTER_MS / 1000} s)`);
  t.same(missing.slice(0, 5), [], `every event arrived within WORKER_DEAD_AFTER + 30 s of the kill (${missing.length} missing)`);
  t.ok(last <= deadline, 'the last one included');
  t.equal(second.child.exitCode, null, 'the other worker is still running');
});

t.test('a worker killed while its request is out: the log shows attempt 1 with its outcome unknown, and the retry as attempt 2', { timeout: 60_000 }, async (t) => {
  const api = await startTestApi(t);
  // The first request is held open (the worker dies waiting for it); later ones are answered.
  const receiver = await startSlowReceiver(t, 0, (index) => index === 0);
  const created = await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: receiver.url } });
  t.equal(created.status, 200, 'webhook made');
  const webhookId = created.body.id as string;
  const logs = async () => (await api.request('GET', `/webhooks/${webhookId}/logs`)).body.values as Array<Record<string, unknown>>;
  const first = await startedWorker(t, api, {});
  const account = await api.request('POST', '/processing_accounts', { json: { name: 'Evented' } });
  t.equal(account.status, 200, 'an event fired');
  t.ok(await eventually(async () => receiver.held.length, (n) => n === 1, 20_000, 10), 'the receiver holds the request open');
  await kill(first);

  const [sent] = await logs();
  t.match(sent, { object: 'webhook_log', attempt: 1, http_status: null, status: 'in_flight' }, 'the attempt the dead worker made is logged, its answer not known');
  await startedWorker(t, api, {});
  const both = await eventually(logs, (values) => values.length === 2 && values[0].status === 'delivered', 30_000, 50);
  t.same(both.map((l) => [l.attempt, l.status, l.http_status]), [[2, 'delivered', 200], [1, 'unknown', null]], 'the retry is attempt 2; attempt 1 has its outcome unknown (status unknown)');
  t.equal(receiver.receipts.length, 2, 'the receiver got the event twice');
  t.equal(new Set(receiver.receipts.map((r) => r.eventId)).size, 1, '…the same event');
  const [delivery] = await api.db('webhook_deliveries').where({ webhook_id: webhookId });
  t.match(delivery, { state: 'delivered', attempts: 2 }, 'the delivery is delivered at its second attempt');
});
