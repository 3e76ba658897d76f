/**
 * A webhook's test event (POST /webhooks/{id}/test): one signed delivery, marked as a test, to
 * that webhook alone, through the normal delivery path (logged, retried), never chosen by a
 * resend, refused for a disabled webhook, and audited.
 */
import { createHmac } from 'node:crypto';
import t from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t);
await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '100ms,100ms', WORKER_POLL_INTERVAL: '50' });

async function webhookFor(url: string): Promise<any> {
  const res = await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body;
}

/** A real processing_status event, which every webhook of that trigger receives. */
async function fireEvent(): Promise<string> {
  const account = (await api.request('POST', '/processing_accounts', { json: { name: 'Evented' } })).body;
  return (await api.db('events').where({ object_id: account.id }).first()).id;
}

const eventIdOf = (request: { headers: Record<string, unknown> }) => request.headers['x-service-event-id'];

t.test('a test event reaches only the webhook it was sent to, signed like a delivery and marked as a test', async (t) => {
  const tested = await startReceiver(t);
  const other = await startReceiver(t);
  const webhook = await webhookFor(`${tested.url}/hook`);
  const bystander = await webhookFor(`${other.url}/hook`);
  const res = await api.request('POST', `/webhooks/${webhook.id}/test`);
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body, { object: 'webhook_delivery', webhook_id: webhook.id, event_id: /^evt_/, series: 0, test: true });
  const [request] = await tested.waitFor(1);
  const secret = webhook.sender_secret as string;
  t.equal(request.headers['x-service-signature'], createHmac('sha256', secret).update(request.body).digest('hex'));
  t.equal(eventIdOf(request), res.body.event_id);
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  t.equal(request.headers['webhook-signature'],
    `v1,${createHmac('sha256', key).update(`${res.body.event_id}.${String(request.headers['webhook-timestamp'])}.${request.body}`).digest('base64')}`);
  t.match(JSON.parse(request.body), {
    object: 'webhook_trigger', event_id: res.body.event_id, webhook_id: webhook.id, trigger: 'processing_status', test: true,
    triggered_on: { id: webhook.id, object: 'webhook', value: { test: true } },
  });
  // A real event after it reaches both; by then the bystander has been sent everything it ever will be.
  const real = await fireEvent();
  await tested.waitFor(2);
  await other.waitFor(1);
  t.same(other.received.map(eventIdOf), [real], 'the other webhook of the trigger received only the real event');
  t.notOk('test' in JSON.parse(tested.received[1].body), 'a real delivery carries no test mark');
  const logs = await eventually(async () => (await api.request('GET', `/webhooks/${webhook.id}/logs?event_id=${res.body.event_id}`)).body.values,
    (values: any[]) => values.some((log) => log.http_status === 200));
  t.match(logs[0], { webhook_id: webhook.id, event_id: res.body.event_id, attempt: 1, http_status: 200 }, 'the attempt is in the webhook\'s logs');
  await api.request('PUT', `/webhooks/${bystander.id}`, { json: { status: 'disabled' } });
  await api.request('PUT', `/webhooks/${webhook.id}`, { json: { status: 'disabled' } });
});

t.test('a failing test delivery is retried on the webhook\'s schedule; resends never choose the test event', async (t) => {
  const receiver = await startReceiver(t);
  receiver.respond = (_request, index) => ({ status: index === 0 ? 500 : 200 });
  const webhook = await webhookFor(`${receiver.url}/flaky`);
  const sent = (await api.request('POST', `/webhooks/${webhook.id}/test`)).body;
  const [first, second] = await receiver.waitFor(2);
  t.same([eventIdOf(first), eventIdOf(second)], [sent.event_id, sent.event_id], 'the retry is the same test event');
  t.equal(JSON.parse(second.body).test, true, 'the retry is still marked as a test');
  const resent = await api.request('POST', `/webhooks/${webhook.id}/resend`, { json: { since: '2000-01-01 00:00:00' } });
  t.equal(resent.status, 200, JSON.stringify(resent.body));
  // The org's events of the trigger: its processing accounts' (its first account's and the first
  // test's), and two test events (one per webhook).
  const real = (await api.db('events').where({ trigger: 'processing_status', object_type: 'processing_account' }).select('id')).map((e: { id: string }) => e.id);
  t.equal(real.length, 2, 'the org\'s first processing account and the one the first test made');
  t.equal(resent.body.events, real.length, 'a window resend finds the real events and neither test event');
  const again = (await receiver.waitFor(2 + real.length)).slice(2);
  t.same(again.map(eventIdOf).sort(), [...real].sort(), 'what it sent again is the real events');
  t.ok(again.every((request) => JSON.parse(request.body).test === undefined), 'none marked as a test');
  const byId = await api.request('POST', `/webhooks/${webhook.id}/resend`, { json: { event_id: sent.event_id } });
  t.equal(byId.status, 404, 'nor can one be resent by its id');
  await api.request('PUT', `/webhooks/${webhook.id}`, { json: { status: 'disabled' } });
});

t.test('a test event is refused for a disabled webhook, an unknown one and with fields; each one sent is audited', async (t) => {
  const receiver = await startReceiver(t);
  const webhook = await webhookFor(`${receiver.url}/audited`);
  const sent = await api.request('POST', `/webhooks/${webhook.id}/test`);
  t.equal(sent.status, 200);
  const audit = await api.request('GET', `/audit_events?object_id=${webhook.id}&action=send_test_event`);
  t.equal(audit.body.values.length, 1, JSON.stringify(audit.body));
  t.match(audit.body.values[0], { action: 'send_test_event', object_type: 'webhook', actor: { type: 'secret_key' }, changes: { event_id: [null, sent.body.event_id] } });
  await api.request('PUT', `/webhooks/${webhook.id}`, { json: { status: 'disabled' } });
  const disabled = await api.request('POST', `/webhooks/${webhook.id}/test`);
  t.equal(disabled.status, 409);
  t.match(disabled.body.description ?? JSON.stringify(disabled.body), /disabled/);
  t.equal((await api.request('POST', '/webhooks/wh_nope/test')).status, 404);
  const withFields = await api.request('POST', `/webhooks/${webhook.id}/test`, { json: { event_id: 'evt_x' } });
  t.equal(withFields.status, 400);
  t.equal((await api.request('GET', `/audit_events?object_id=${webhook.id}&action=send_test_event`)).body.values.length, 1, 'a refused test is not audited');
});
