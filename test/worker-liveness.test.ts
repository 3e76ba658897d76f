/**
 * A busy worker process keeps its jobs: beside a second worker, a worker whose event loop is held
 * by its own work for three times WORKER_DEAD_AFTER is not declared dead, none of its jobs is
 * handed to the other, and no delivery is attempted twice (workers/livenessThread.ts).
 *
 * Worker A runs in this process, its outbound client a seam that holds the event loop (a
 * synchronous spin, as a flood of CPU-bound work would) once its deliveries are in hand. Worker B
 * is a real `node workers/main.ts`, paused (SIGSTOP) while A takes the deliveries so that A holds
 * every one of them, and resumed before A's loop is held: B is then a live process that would
 * take over any job released from A. A loop held far longer (stuck, not busy) is a stopped
 * process, whose jobs B must take over.
 */
import t, { type Test } from 'tap';
import type { Outbound } from '../api/seams.ts';
import { createOutbound } from '../workers/webhooks/outbound.ts';
import { slowBudget } from '../workers/webhooks/tenantSlots.ts';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { spawnAnnouncedWorker } from './helpers/processes.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

const DEAD_AFTER_MS = 1000;
const DELIVERIES = 4;

interface HeldRun {
  received: Array<{ headers: Record<string, unknown> }>;
  attempts: string[];
  /** what worker B logged */
  bOutput: string;
}

/**
 * Worker A takes DELIVERIES deliveries while B is paused, B is resumed, and A's event loop is then
 * held for `heldMs` by its first delivery; every delivery arrives (a released one perhaps twice).
 */
async function holdWorkerA(t: Test, deadAfterMs: number, heldMs: number): Promise<HeldRun> {
  const api = await startTestApi(t);
  const receiver = await startReceiver(t);
  const hook = await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: `${receiver.url}/hook` } });
  t.equal(hook.status, 200);

  const b = await spawnAnnouncedWorker(t, api.db, {
    DATABASE_URL: api.databaseUrl, WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_DEAD_AFTER: `${deadAfterMs}ms`, LOG_LEVEL: 'warn',
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
        const until = Date.now() + heldMs;
        while (Date.now() < until); // the event loop is this job's alone
      }
      return real.request(url, request, limit);
    },
  };
  // Requests held past 200 ms make the org's receivers slow, and a slow org's attempts may fill
  // only slowBudget(concurrency) of A's slots (workers/webhooks/tenantSlots.ts): at a concurrency
  // of DELIVERIES the last delivery was deferred whenever the first went out that long before it (a
  // loaded machine). Two more slots leave room for every one of them.
  const concurrency = DELIVERIES + 2;
  t.ok(slowBudget(concurrency) >= DELIVERIES, 'A may hold every delivery of one slow org');
  await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_DEAD_AFTER: `${deadAfterMs}ms`, WORKER_CONCURRENCY: String(concurrency), WEBHOOK_TENANT_CONCURRENCY: '0' }, { outbound: busy });

  for (let i = 0; i < DELIVERIES; i++) {
    const res = await api.request('POST', '/processing_accounts', { json: { name: `Busy ${i}` } });
    t.equal(res.status, 200);
  }
  t.equal(await eventually(() => inHand, (n) => n === DELIVERIES, 10_000), DELIVERIES, 'A has every delivery in hand');
  b.child.kill('SIGCONT');
  hold();

  const received = await receiver.waitFor(DELIVERIES, 30_000);
  await new Promise((resolve) => setTimeout(resolve, 2 * deadAfterMs)); // room for a second attempt to arrive, if one were made
  t.ok(spun, "A's event loop was held");
  t.equal(new Set(received.map((r) => String(r.headers['x-service-event-id']))).size, DELIVERIES, 'every event arrived');
  const deliveries = await api.db('webhook_deliveries').select('state', 'attempts');
  return { received, attempts: deliveries.map((d: { state: string; attempts: number }) => `${d.state}:${d.attempts}`), bOutput: b.output() };
}

t.test('a worker saturated past WORKER_DEAD_AFTER beside another keeps its jobs: none released, no attempt twice', { timeout: 90_000 }, async (t) => {
  const run = await holdWorkerA(t, DEAD_AFTER_MS, 3 * DEAD_AFTER_MS);
  t.equal(run.received.length, DELIVERIES, 'each event arrived once');
  t.same(new Set(run.attempts), new Set(['delivered:1']), 'each delivery made one attempt');
  t.notMatch(run.bOutput, /released the jobs of silent worker processes/, 'B released no job of A');
});

t.test('a worker whose event loop stays held far past WORKER_DEAD_AFTER (stuck, not busy) has its jobs released to another', { timeout: 90_000 }, async (t) => {
  const deadAfterMs = 400;
  // Past the thread's STALLED_BEATS (10) × WORKER_DEAD_AFTER, and the silence after it.
  const run = await holdWorkerA(t, deadAfterMs, 14 * deadAfterMs);
  t.match(run.bOutput, /released the jobs of silent worker processes/, 'B released the jobs of the stuck A');
  t.ok(run.attempts.includes('delivered:2'), 'B made the next attempt of a delivery A held');
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
