/**
 * A replay of missed events survives a worker killed half-way (`kill -9`, real worker processes):
 * every missed event still arrives, and an event arrives twice only when the attempt in flight at
 * the kill is repeated (its log then says `unknown`); a second only_missed run finds nothing.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';
import { spawnAnnouncedWorker, type SpawnedWorker } from './helpers/processes.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

const EVENTS = 200;
const api = await startTestApi(t);
const receiver = await startReceiver(t);

function started(): Promise<SpawnedWorker> {
  return spawnAnnouncedWorker(t, api.db, { DATABASE_URL: api.databaseUrl, WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_DEAD_AFTER: '2000ms', WORKER_POLL_INTERVAL: '100', LOG_LEVEL: 'warn' });
}

t.test('a worker killed mid-replay: nothing missed stays undelivered, nothing arrives twice but the attempt in flight', { timeout: 120_000 }, async (t) => {
  const since = new Date().toISOString();
  // Limited to 50/s, so the replay lasts some 4 s and the kill lands in the middle of it.
  const hook = (await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: `${receiver.url}/replay`, rate_limit: 50 } })).body;
  await api.request('PUT', `/webhooks/${hook.id}`, { json: { status: 'disabled' } });
  const first = await started();
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < EVENTS) {
      next += 1;
      await api.request('POST', '/processing_accounts', { json: { name: `Missed ${next}` } });
    }
  }));
  const skippedCount = async () => Number((await api.db('webhook_deliveries').where({ webhook_id: hook.id, state: 'skipped' }).count({ n: '*' }))[0].n);
  t.equal(await eventually(skippedCount, (n) => n === EVENTS, 20_000), EVENTS, 'every event recorded as skipped');
  t.equal(receiver.received.length, 0);

  await api.request('PUT', `/webhooks/${hook.id}`, { json: { status: 'active' } });
  const until = new Date(Date.now() + 60_000).toISOString();
  const replay = await api.request('POST', `/webhooks/${hook.id}/resend`, { json: { since, until, only_missed: true } });
  t.same(replay.body, { object: 'webhook_resend', webhook_id: hook.id, events: EVENTS });
  await eventually(async () => receiver.received.length, (n) => n >= EVENTS / 3, 30_000, 10);
  first.child.kill('SIGKILL');
  await first.exited;
  const atKill = receiver.received.length;
  await started();

  const missed = (await api.db('webhook_deliveries').where({ webhook_id: hook.id, state: 'skipped' }).select('event_id')).map((d: { event_id: string }) => d.event_id);
  const arrived = () => new Set(receiver.received.map((r) => String(r.headers['x-service-event-id'])));
  await eventually(async () => missed.filter((id) => !arrived().has(id)).length, (n) => n === 0, 60_000, 50);
  t.same(missed.filter((id) => !arrived().has(id)), [], `every missed event arrived (${atKill} before the kill)`);
  const counts = new Map<string, number>();
  for (const r of receiver.received) counts.set(String(r.headers['x-service-event-id']), (counts.get(String(r.headers['x-service-event-id'])) ?? 0) + 1);
  const twice = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
  const logs = await api.db('webhook_logs').whereRaw(`data->>'webhook_id' = ?`, [hook.id]).select('data');
  const unknown = new Set(logs.filter((l: any) => l.data.status === 'unknown').map((l: any) => l.data.event_id));
  t.same(twice.filter((id) => !unknown.has(id)), [], `an event arrived twice only after an attempt in flight at the kill (${twice.length} twice, ${unknown.size} unknown)`);
  t.ok([...counts.values()].every((n) => n <= 2), 'none more than twice');

  await eventually(() => api.db('webhook_deliveries').where({ webhook_id: hook.id, state: 'pending' }), (rows: unknown[]) => rows.length === 0, 30_000);
  const again = await api.request('POST', `/webhooks/${hook.id}/resend`, { json: { since, until, only_missed: true } });
  t.same(again.body.events, 0, 'a second run finds nothing left');
});
