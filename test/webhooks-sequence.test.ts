/**
 * Order per object (`sequence`, `X-Service-Sequence`): for one `triggered_on.id` the sequence
 * rises in the order the changes committed, under concurrent writers, so a receiver that keeps the
 * highest it applied can drop a stale retry.
 */
import t from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t);
await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50' });

t.test('50 concurrent status changes of one payment link arrive with sequences in commit order', async (t) => {
  const receiver = await startReceiver(t);
  const hook = await api.request('POST', '/webhooks', { json: { trigger: 'payment_link:status', url: `${receiver.url}/links` } });
  t.equal(hook.status, 200, JSON.stringify(hook.body));
  const link = (await api.request('POST', '/payment_links', { json: { type: 'reusable', description: 'Tickets', amount: 8 } })).body;
  // Each update asks for one of the two statuses; only a change emits an event, so in commit order
  // the events alternate, and a sequence out of commit order shows as two equal values in a row.
  const answers = await Promise.all(Array.from({ length: 50 }, (_, i) =>
    api.request('PUT', `/payment_links/${link.id}`, { json: { status: i % 2 === 0 ? 'inactive' : 'active' } })));
  t.same([...new Set(answers.map((a) => a.status))], [200], 'every update answered');
  const stored = await api.db('events').where({ object_id: link.id }).count<{ count: string }[]>('* as count');
  const expected = Number(stored[0].count);
  t.ok(expected >= 2, `${expected} changes committed`);
  const got = await receiver.waitFor(expected, 20_000);
  t.equal(got.length, expected, 'every change delivered');
  const bodies = got.map((request) => ({ body: JSON.parse(request.body), header: request.headers['x-service-sequence'] }));
  for (const { body, header } of bodies) t.equal(header, String(body.sequence), 'header and body carry the same sequence');
  const ordered = bodies.map((b) => b.body).sort((a, b) => a.sequence - b.sequence);
  const sequences = ordered.map((b) => b.sequence);
  t.equal(new Set(sequences).size, sequences.length, 'no sequence repeats');
  const statuses = ordered.map((b) => b.triggered_on.value);
  t.same(statuses.filter((status, i) => i > 0 && status === statuses[i - 1]), [], 'by sequence, each event changes the status the one before left');
  t.equal(statuses[0], 'inactive', 'the first change leaves active');
  const final = (await api.request('GET', `/payment_links/${link.id}`)).body.status;
  t.equal(statuses.at(-1), final, 'the highest sequence carries the state that stayed');
});

t.test('a retry carries the sequence of its event, so a receiver can drop it as stale', async (t) => {
  const receiver = await startReceiver(t);
  receiver.respond = (_request, index) => ({ status: index === 0 ? 500 : 200 });
  const hook = await api.request('POST', '/webhooks', { json: { trigger: 'payment_link:status', url: `${receiver.url}/retry`, retries: 2 } });
  const link = (await api.request('POST', '/payment_links', { json: { type: 'reusable', description: 'Retry', amount: 5 } })).body;
  await api.request('PUT', `/payment_links/${link.id}`, { json: { status: 'inactive' } });
  await api.request('PUT', `/payment_links/${link.id}`, { json: { status: 'active' } });
  const got = await receiver.waitFor(3, 20_000);
  t.equal(got.length, 3, 'two events, one of them twice');
  const bodies = got.map((r) => JSON.parse(r.body));
  const byEvent = new Map<string, number[]>();
  for (const b of bodies) byEvent.set(b.event_id, [...(byEvent.get(b.event_id) ?? []), b.sequence]);
  for (const [event, sequences] of byEvent) t.equal(new Set(sequences).size, 1, `every attempt of ${event} has one sequence`);
  const highest = new Map<string, number>();
  const applied: string[] = [];
  for (const b of bodies) {
    if ((highest.get(b.triggered_on.id) ?? -1) >= b.sequence) continue;
    highest.set(b.triggered_on.id, b.sequence);
    applied.push(b.triggered_on.value);
  }
  t.equal(applied.at(-1), 'active', 'a receiver dropping lower sequences ends with the state that committed last');
  await eventually(() => api.db('webhook_deliveries').where({ webhook_id: hook.body.id, state: 'pending' }), (rows: unknown[]) => rows.length === 0);
});
