/**
 * `POST /webhooks/{id}/resend` of a window delivers its events in commit order: each event's first
 * attempt starts only after the previous event's first attempt ended (answered, or failed with its
 * retry scheduled), however many deliveries the worker could run at once. Retries do not hold the
 * order up.
 */
import http from 'node:http';
import t, { type Test } from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t);
await startTestWorker(t, api.databaseUrl, {
  WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50', WORKER_CONCURRENCY: '16', WEBHOOK_TENANT_CONCURRENCY: '16', WEBHOOK_RETRY_SCHEDULE: '30s',
});

interface Attempt {
  eventId: string;
  arrived: number;
  answered: number;
}

/** A receiver that takes a while to answer, records when each request arrived and when it was answered, and fails the events named. */
async function slowReceiver(t: Test, failing: Set<string>): Promise<{ url: string; attempts: Attempt[] }> {
  const attempts: Attempt[] = [];
  let clock = 0;
  // A logical clock: arrivals and answers are ordered by when they happened, not by durations.
  const tick = () => ++clock;
  const server = http.createServer((req, res) => {
    const arrived = tick();
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const eventId = JSON.parse(Buffer.concat(chunks).toString()).event_id as string;
      setTimeout(() => {
        attempts.push({ eventId, arrived, answered: tick() });
        res.writeHead(failing.has(eventId) ? 500 : 200);
        res.end();
      }, 60);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, attempts };
}

/**
 * Waits until the dispatcher has passed these events: they were written while the webhook was
 * disabled, so it gets none of them, and only its resend delivers them. Activating the webhook
 * before the pass would let the pass deliver them too, outside the resend's line.
 */
async function dispatchedPast(events: string[]): Promise<void> {
  const passed = async () => (await api.db.raw(
    `select bool_and(pg_visible_in_snapshot(e.txid, p.dispatched)) as passed from events e, webhook_dispatch_position p where e.id = any(?)`,
    [events])).rows[0].passed as boolean;
  await eventually(passed, Boolean, 30_000);
}

t.test('a resent window arrives one event at a time, in commit order, a failed one not holding up the next', async (t) => {
  const hook = (await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: 'https://example.com/off', status: 'disabled' } })).body;
  const since = new Date().toISOString();
  const accounts: string[] = [];
  for (let i = 0; i < 12; i++) accounts.push((await api.request('POST', '/processing_accounts', { json: { name: `Account ${i}` } })).body.id);
  const events = (await api.db('events').where({ trigger: 'processing_status' }).whereIn('object_id', accounts).orderBy('seq').select('id')).map((e: { id: string }) => e.id);
  t.equal(events.length, 12);

  const failing = new Set([events[3], events[7]]);
  const receiver = await slowReceiver(t, failing);
  await dispatchedPast(events);
  await api.request('PUT', `/webhooks/${hook.id}`, { json: { url: receiver.url, status: 'active' } });
  const resent = await api.request('POST', `/webhooks/${hook.id}/resend`, { json: { since, until: new Date(Date.now() + 60_000).toISOString() } });
  t.same(resent.body, { object: 'webhook_resend', webhook_id: hook.id, events: 12 });

  const attempts = await eventually(() => receiver.attempts, (a) => a.length >= 12, 30_000);
  t.same(attempts.map((a) => a.eventId), events, 'first attempts in commit order');
  for (let i = 1; i < attempts.length; i++) {
    t.ok(attempts[i].arrived > attempts[i - 1].answered, `event ${i} arrived after event ${i - 1}'s attempt was answered`);
  }
  const states = async () => (await api.db('webhook_deliveries').where({ webhook_id: hook.id }).where('series', '>', 0).orderBy('event_id').select('event_id', 'state'))
    .filter((d: { state: string }) => d.state !== 'delivered').map((d: { event_id: string; state: string }) => `${d.event_id} ${d.state}`);
  t.same(await eventually(states, (s) => s.length === 2), [...failing].sort().map((id) => `${id} pending`), 'the failed ones wait for their retries, out of the line');
});

t.test('a rate-limited webhook\'s resend keeps commit order while it waits for its slots', async (t) => {
  const receiver = await slowReceiver(t, new Set());
  const hook = (await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: receiver.url, status: 'disabled', rate_limit: 4 } })).body;
  const since = new Date().toISOString();
  const accounts: string[] = [];
  for (let i = 0; i < 8; i++) accounts.push((await api.request('POST', '/processing_accounts', { json: { name: `Limited ${i}` } })).body.id);
  const events = (await api.db('events').where({ trigger: 'processing_status' }).whereIn('object_id', accounts).orderBy('seq').select('id')).map((e: { id: string }) => e.id);
  await dispatchedPast(events);
  await api.request('PUT', `/webhooks/${hook.id}`, { json: { status: 'active' } });
  const resent = await api.request('POST', `/webhooks/${hook.id}/resend`, { json: { since, until: new Date(Date.now() + 60_000).toISOString() } });
  t.equal(resent.body.events, 8);
  const attempts = await eventually(() => receiver.attempts, (a) => a.length >= 8, 30_000);
  t.same(attempts.map((a) => a.eventId), events, 'commit order');
  t.ok(attempts.every((a, i) => i === 0 || a.arrived > attempts[i - 1].answered), 'one at a time');
});
