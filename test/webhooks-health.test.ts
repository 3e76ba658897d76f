/**
 * Health events and nothing skipped forgotten (CONTRACT §19), with real loopback receivers:
 * `webhook:status` reaches the org's other subscribed webhooks when one is disabled or enabled,
 * never the webhook it is about; a disabled webhook's events are logged `skipped`; a resend with
 * `only_missed` delivers exactly those (and failed ones), once.
 */
import t from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t);
await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50', WEBHOOK_RETRY_SCHEDULE: '100ms' });

const bodies = (receiver: Receiver) => receiver.received.map((r) => JSON.parse(r.body));

async function webhook(json: Record<string, unknown>) {
  const res = await api.request('POST', '/webhooks', { json });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body;
}

/** n processing accounts, each firing one processing_status event; their event ids, oldest first. */
async function fireEvents(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const account = (await api.request('POST', '/processing_accounts', { json: { name: `Evented ${i}` } })).body;
    ids.push((await api.db('events').where({ object_id: account.id }).first()).id);
  }
  return ids;
}

async function logStatuses(webhookId: string): Promise<string[]> {
  return (await api.request('GET', `/webhooks/${webhookId}/logs?limit=100`)).body.values.map((l: any) => l.status);
}

t.test('webhook:status goes to the other subscribers when a 410 disables a webhook and when PUT enables it, never to the webhook itself', async (t) => {
  const watcher = await startReceiver(t);
  const gone = await startReceiver(t);
  gone.respond = () => ({ status: 410 });
  const watching = await webhook({ trigger: 'webhook:status', url: `${watcher.url}/watch` });
  const target = await webhook({ trigger: 'processing_status', url: `${gone.url}/gone` });
  await fireEvents(1);
  const [disabled] = await watcher.waitFor(1);
  t.match(JSON.parse(disabled.body), { trigger: 'webhook:status', triggered_on: { id: target.id, object: 'webhook', value: 'disabled' } });
  const read = (await api.request('GET', `/webhooks/${target.id}`)).body;
  t.same([read.status, read.disabled_reason], ['disabled', 'The receiver answered 410 Gone']);
  // The worker's disable is a change through the webhook family: audited as the system's, announced once.
  const audited = (await api.request('GET', `/audit_events?object_id=${target.id}&q=action != "create"`)).body.values;
  t.match(audited, [{ actor: { type: 'system', name: 'webhook_health' }, changes: { status: ['active', 'disabled'], disabled_reason: [null, 'The receiver answered 410 Gone'] } }]);
  t.equal((await api.db('events').where({ object_id: target.id, trigger: 'webhook:status' })).length, 1, 'one webhook:status event');

  gone.respond = () => ({ status: 200 });
  t.equal((await api.request('PUT', `/webhooks/${target.id}`, { json: { status: 'active' } })).status, 200);
  await watcher.waitFor(2);
  t.match(bodies(watcher)[1], { triggered_on: { id: target.id, value: 'active' } }, 'enabled again');
  t.equal(gone.received.length, 1, 'enabling sends nothing by itself');

  // The watcher disabled: a second watcher hears it, the watcher itself does not.
  const second = await startReceiver(t);
  await webhook({ trigger: 'webhook:status', url: `${second.url}/second` });
  t.equal((await api.request('PUT', `/webhooks/${watching.id}`, { json: { status: 'disabled' } })).body.disabled_reason, 'Disabled by request (PUT status: disabled)');
  const [heard] = await second.waitFor(1);
  t.match(JSON.parse(heard.body), { triggered_on: { id: watching.id, value: 'disabled' } });
  const [{ n }] = (await api.db.raw(`select count(*)::int as n from webhook_deliveries d join events e on e.id = d.event_id where d.webhook_id = ? and e.object_id = ?`, [watching.id, watching.id])).rows;
  t.equal(n, 0, 'no delivery, skipped or other, of its own status event to the webhook it is about');
  t.equal(watcher.received.length, 2);
});

t.test('a disabled webhook\'s events are skipped; resend only_missed delivers exactly those and failed ones in commit order, then finds nothing', async (t) => {
  const receiver = await startReceiver(t);
  const since = new Date().toISOString();
  let failing = true;
  receiver.respond = () => ({ status: failing ? 500 : 200 });
  const hook = await webhook({ trigger: 'processing_status', url: `${receiver.url}/missed`, retries: 0 });
  const [failed] = await fireEvents(1);
  await eventually(() => logStatuses(hook.id), (s) => s.includes('failed'));
  failing = false;
  const [delivered] = await fireEvents(1);
  await receiver.waitFor(2);
  await api.request('PUT', `/webhooks/${hook.id}`, { json: { status: 'disabled' } });
  const skipped = await fireEvents(5);
  const statuses = await eventually(() => logStatuses(hook.id), (s) => s.filter((x) => x === 'skipped').length === 5);
  t.equal(statuses.filter((x) => x === 'skipped').length, 5, 'each event it would have received is logged skipped');
  const skippedLog = (await api.request('GET', `/webhooks/${hook.id}/logs?limit=1`)).body.values[0];
  t.match(skippedLog, { status: 'skipped', attempt: 0, http_status: null, event_id: skipped[4] });
  t.equal(receiver.received.length, 2, 'nothing was sent while disabled');

  t.equal((await api.request('PUT', `/webhooks/${hook.id}`, { json: { status: 'active' } })).status, 200);
  const until = new Date(Date.now() + 60_000).toISOString();
  const resent = await api.request('POST', `/webhooks/${hook.id}/resend`, { json: { since, until, only_missed: true } });
  t.equal(resent.status, 200, JSON.stringify(resent.body));
  t.same(resent.body, { object: 'webhook_resend', webhook_id: hook.id, events: 6 });
  const got = await receiver.waitFor(8);
  const replayed = got.slice(2).map((r) => JSON.parse(r.body));
  t.same(new Set(replayed.map((b) => b.event_id)), new Set([failed, ...skipped]), 'exactly the failed and the skipped events, not the delivered one');
  t.notOk(replayed.some((b) => b.event_id === delivered));
  const order = [failed, ...skipped];
  t.same([...replayed].sort((a, b) => a.sequence - b.sequence).map((b) => b.event_id), order, 'sequences follow commit order');
  const again = await api.request('POST', `/webhooks/${hook.id}/resend`, { form: `since=${encodeURIComponent(since)}&until=${encodeURIComponent(until)}&only_missed=true` });
  t.same(again.body, { object: 'webhook_resend', webhook_id: hook.id, events: 0 }, 'run twice, the second finds nothing left');

  await eventually(() => api.db('webhook_deliveries').where({ webhook_id: hook.id, state: 'pending' }), (rows: unknown[]) => rows.length === 0);
  const all = await api.request('POST', `/webhooks/${hook.id}/resend`, { json: { since, until } });
  t.same(all.body.events, 7, 'without only_missed: every event of the window, the delivered one too');
  await receiver.waitFor(15);
  t.equal(receiver.received.length, 15);
  await api.request('PUT', `/webhooks/${hook.id}`, { json: { status: 'disabled' } });
});

t.test('resend: until before since is a 400, another org\'s webhook a 404, only_missed must be a boolean', async (t) => {
  const hook = await webhook({ trigger: 'processing_status', url: 'https://example.com/x', retries: 0 });
  const deliveriesOf = async () => Number((await api.db('webhook_deliveries').where({ webhook_id: hook.id }).count<{ count: string }[]>('* as count'))[0].count);
  // An event of the window, so a resend that went through would write a delivery.
  await fireEvents(1);
  await eventually(deliveriesOf, (n) => n === 1);
  const before = await deliveriesOf();
  const backwards = await api.request('POST', `/webhooks/${hook.id}/resend`, { json: { since: '2026-11-25 10:00:00', until: '2026-11-25 09:00:00', only_missed: true } });
  t.equal(backwards.status, 400);
  t.match(backwards.body, { error_type: 'InvalidAttributes', details: { until: 'Must not be before since' } });
  const maybe = await api.request('POST', `/webhooks/${hook.id}/resend`, { json: { since: '2026-11-25 10:00:00', only_missed: 'maybe' } });
  t.match(maybe.body, { error_type: 'InvalidAttributes', details: { only_missed: 'Must be true or false' } });
  const other = await api.newKey('initech', 'test');
  const foreign = await api.request('POST', `/webhooks/${hook.id}/resend`, { key: other, json: { since: '2026-11-25 10:00:00', only_missed: true } });
  t.same([foreign.status, foreign.body.error_type], [404, 'NotFound']);
  t.equal(await deliveriesOf(), before, 'nothing written');
});

t.test('fields=*,health: last success, failed attempts since, failing_since and disabled_at', async (t) => {
  const receiver = await startReceiver(t);
  let status = 200;
  receiver.respond = () => ({ status });
  const hook = await webhook({ trigger: 'processing_status', url: `${receiver.url}/health`, retries: 0 });
  await fireEvents(1);
  await eventually(() => logStatuses(hook.id), (s) => s.includes('delivered'));
  status = 500;
  await fireEvents(2);
  await eventually(() => logStatuses(hook.id), (s) => s.filter((x) => x === 'failed').length === 2);
  // The streak is noted after the failed attempt's log is completed: wait for it, not for the log.
  const read = await eventually(async () => (await api.request('GET', `/webhooks/${hook.id}?fields=*,health`)).body, (body) => body.failing_since != null);
  t.match(read.health, { last_delivered_at: /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/, failed_attempts: 2 });
  t.match(read.failing_since, /^\d{4}-/, 'the streak started when the first schedule ran out');
  t.equal((await api.request('GET', `/webhooks/${hook.id}`)).body.health, undefined, 'health only when asked for');
  await api.request('PUT', `/webhooks/${hook.id}`, { json: { status: 'disabled' } });
});
