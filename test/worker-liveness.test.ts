/**
 * A busy worker process keeps its jobs: beside a second worker, a worker whose event loop is held
 * by its own work for three times WORKER_DEAD_AFTER is not declared dead, none of its jobs is
 * handed to the other, and no delivery is attempted twice (workers/livenessThread.ts).
 *
 * Worker A runs in this process, its outbound client a seam that holds the event loop (a
 * synchronous spin, as a flood of CPU-bound work would) once its deliveries are in hand. Worker B
 * is a real `node workers/main.ts`, paused (SIGSTOP) while A takes the deliveries so that A holds
 * every one of them, and resumed before A's loop is held: B is then a live process that would
 * take over any job released from A.
 */
import t from 'tap';
import type { Outbound } from '../api/seams.ts';
import { createOutbound } from '../workers/webhooks/outbound.ts';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { spawnAnnouncedWorker } from './helpers/processes.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

const DEAD_AFTER_MS = 1000;
const HELD_MS = 3 * DEAD_AFTER_MS;
const DELIVERIES = 4;

t.test('a worker saturated past WORKER_DEAD_AFTER beside another keeps its jobs: none released, no attempt twice', { timeout: 90_000 }, async (t) => {
  const api = await startTestApi(t);
  const receiver = await startReceiver(t);
  const hook = await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: `${receiver.url}/hook` } });
  t.equal(hook.status, 200);

  const b = await spawnAnnouncedWorker(t, api.db, {
    DATABASE_URL: api.databaseUrl, WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_DEAD_AFTER: `${DEAD_AFTER_MS}ms`, LOG_LEVEL: 'warn',
    // B takes jobs, A dispatches: a paused B must hold no dispatch turn.
    WEBHOOK_DISPATCH_POLL: '0',
  });
  b.child.kill('SIGSTOP');
  t.teardown(() => void b.child.kill('SIGCONT'));

  const real = createOutbound({ allowPrivate: true, timeoutMs: 15_000 });
  let inHand = 0;
  let hold: () => void = () => {};
  const held = new Promise<void>((resolve) => (hold = resolve));
  let spun = false;
  const busy: Outbound = {
    request: async (url, request, limit) => {
      inHand += 1;
      await held;
      if (!spun) {
        spun = true;
        const until = Date.now() + HELD_MS;
        while (Date.now() < until); // the event loop is this job's alone
      }
      return real.request(url, request, limit);
    },
  };
  await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_DEAD_AFTER: `${DEAD_AFTER_MS}ms`, WORKER_CONCURRENCY: String(DELIVERIES), WEBHOOK_TENANT_CONCURRENCY: '0' }, { outbound: busy });

  for (let i = 0; i < DELIVERIES; i++) {
    const res = await api.request('POST', '/processing_accounts', { json: { name: `Busy ${i}` } });
    t.equal(res.status, 200);
  }
  t.equal(await eventually(() => inHand, (n) => n === DELIVERIES, 10_000), DELIVERIES, 'A has every delivery in hand');
  b.child.kill('SIGCONT');
  hold();

  const received = await receiver.waitFor(DELIVERIES, 30_000);
  await new Promise((resolve) => setTimeout(resolve, 2 * DEAD_AFTER_MS)); // room for a second attempt to arrive, if one were made
  t.ok(spun, "A's event loop was held");
  const events = received.map((r) => String(r.headers['x-service-event-id']));
  t.equal(new Set(events).size, DELIVERIES, 'every event arrived');
  t.equal(received.length, DELIVERIES, '…each once');
  const deliveries = await api.db('webhook_deliveries').select('state', 'attempts');
  t.same(new Set(deliveries.map((d: { state: string; attempts: number }) => `${d.state}:${d.attempts}`)), new Set(['delivered:1']), 'each delivery made one attempt');
  t.notMatch(b.output(), /released the jobs of silent worker processes/, 'B released no job of A');
});

t.test('a worker stopped by SIGTERM takes itself off the heartbeat list: no later worker finds it silent', { timeout: 60_000 }, async (t) => {
  const api = await startTestApi(t);
  const ids = async () => (await api.db('worker_heartbeats').select('worker_id')).map((row: { worker_id: string }) => row.worker_id);
  const worker = await spawnAnnouncedWorker(t, api.db, { DATABASE_URL: api.databaseUrl, LOG_LEVEL: 'warn' });
  t.ok((await ids()).length > 0, 'announced');
  worker.child.kill('SIGTERM');
  await worker.exited;
  t.same(await ids(), [], 'its ids are gone once it has stopped');
});
