/**
 * Per-endpoint rate limits (CONTRACT §19): deliveries of a webhook with `rate_limit` beyond it wait
 * their turn across all workers (two workers here, each with its own pool and limiter, sharing
 * only the database): never more than the limit in a second, nothing failed, no attempt counted.
 */
import t from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t);
const WORKER = { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '100' };
await startTestWorker(t, api.databaseUrl, WORKER);
await startTestWorker(t, api.databaseUrl, WORKER);

/** Receipts per whole second counted from the first. */
function perSecond(times: number[]): number[] {
  const start = Math.min(...times);
  const counts: number[] = [];
  for (const at of times) {
    const second = Math.floor((at - start) / 1000);
    counts[second] = (counts[second] ?? 0) + 1;
  }
  return Array.from(counts, (n) => n ?? 0);
}

t.test('rate_limit is 1 to 1000 per second or null; 0, 5000, a string or a fraction is a 400 that changes nothing', async (t) => {
  for (const bad of [0, 5000, 'ten', 2.5, -1]) {
    const res = await api.request('POST', '/webhooks', { json: { trigger: 'payment', url: 'https://example.com/x', rate_limit: bad } });
    t.equal(res.status, 400, `rate_limit ${JSON.stringify(bad)}`);
    t.match(res.body, { object: 'error', error_type: 'InvalidAttributes', details: { rate_limit: String } });
  }
  t.equal(Number((await api.db('webhooks').count<{ count: string }[]>('* as count'))[0].count), 0, 'no webhook made');
  const made = await api.request('POST', '/webhooks', { json: { trigger: 'payment', url: 'https://example.com/x', rate_limit: 1000 } });
  t.equal(made.body.rate_limit, 1000);
  const form = await api.request('POST', '/webhooks', { form: 'trigger=payment&url=https%3A%2F%2Fexample.com%2Fy&rate_limit=1' });
  t.equal(form.body.rate_limit, 1, 'a form value is coerced');
  const refused = await api.request('PUT', `/webhooks/${made.body.id}`, { json: { rate_limit: 0 } });
  t.equal(refused.status, 400);
  t.equal((await api.request('GET', `/webhooks/${made.body.id}`)).body.rate_limit, 1000, 'unchanged');
  const cleared = await api.request('PUT', `/webhooks/${made.body.id}`, { json: { rate_limit: null } });
  t.equal(cleared.body.rate_limit, null, 'null: no limit');
  for (const id of [made.body.id, form.body.id]) await api.request('PUT', `/webhooks/${id}`, { json: { status: 'disabled' } });
});

t.test('two workers never exceed one webhook\'s limit together; every event arrives once, no attempt wasted', { timeout: 60_000 }, async (t) => {
  const receiver = await startReceiver(t);
  const limited = await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: `${receiver.url}/limited`, rate_limit: 10 } });
  t.equal(limited.status, 200, JSON.stringify(limited.body));
  const EVENTS = 40;
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < EVENTS) {
      next += 1;
      await api.request('POST', '/processing_accounts', { json: { name: `Burst ${next}` } });
    }
  }));
  const got = await receiver.waitFor(EVENTS, 30_000);
  t.equal(got.length, EVENTS, 'every event arrived');
  t.equal(new Set(got.map((r) => r.headers['x-service-event-id'])).size, EVENTS, 'each once');
  const times = got.map((r) => r.at).sort((a, b) => a - b);
  // Counted from the second arrival: the first opens the receiver's connection and can run late
  // by its setup, and seconds counted from a late start hold more of the slots that follow it
  // (12 and 13 seen at low load, on the old code as on the new).
  const seconds = perSecond(times.slice(1));
  // Slots are 100 ms apart; an arrival that ran late (the web and both workers share this process)
  // can fall into the next second beside that second's own ten.
  // Arrival times, not send times: late arrivals fall into the next second beside its own ten
  // (CI saw 12, 10, 10, 8; a quiet 2-core machine 13 or 14, 10, 10, 6 or 5). The bound catches a limiter that lets a burst through (its first second would hold
  // most of the 40); the span below bounds the average.
  t.ok(Math.max(...seconds) <= 16, `10 (more for arrivals that ran late) in each second: ${seconds.join(', ')}`);
  const span = Math.max(...times) - Math.min(...times);
  // 39 slots of 100 ms after the first: 3.9 s, less what the first arrival ran late by (it opens
  // the receiver's connection; loaded CI machines measured 3,799 and 3,690 ms). The bound allows
  // 400 ms of that and still fails a limiter that lets 12 a second through (3.25 s); the
  // per-second counts above are the limit itself.
  t.ok(span >= 3500, `40 deliveries at 10/s take about 3.9 s from first to last: ${span} ms`);
  // The receiver has the last event a moment before its worker records the answer.
  const deliveries = await eventually(() => api.db('webhook_deliveries').where({ webhook_id: limited.body.id }),
    (rows: Array<{ state: string }>) => rows.length === EVENTS && rows.every((d) => d.state !== 'pending'), 5000, 50);
  t.same([...new Set(deliveries.map((d: any) => `${d.state}/${d.attempts}`))], ['delivered/1'], 'each delivered at its first attempt: waiting counted none');
  await api.request('PUT', `/webhooks/${limited.body.id}`, { json: { status: 'disabled' } });
});
