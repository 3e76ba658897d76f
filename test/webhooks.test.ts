import { createHmac } from 'node:crypto';
import t from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';
import { createKnex } from '../api/db/admin.ts';
import { up as upgradeJobs } from '../migrations/20261126000100_delivery_jobs_carry_events.ts';

const WORKER = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,300ms', WORKER_POLL_INTERVAL: '50' };
const api = await startTestApi(t);
// The worker's clock (OAuth token lifetimes among others) is moved, not waited for.
let clockOffsetMs = 0;
await startTestWorker(t, api.databaseUrl, WORKER, { clock: () => new Date(Date.now() + clockOffsetMs) });

/** A webhook's answered attempts, newest first (an attempt is logged `in_flight` as its request goes out). */
async function logsOf(webhookId: string): Promise<any[]> {
  return answered((await api.request('GET', `/webhooks/${webhookId}/logs`)).body.values);
}

function answered(logs: any[]): any[] {
  return logs.filter((log) => log.status !== 'in_flight');
}

async function webhookFor(url: string, extra: Record<string, unknown> = {}) {
  const res = await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url, ...extra } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body;
}

/** Each processing account created emits one processing_status event. */
async function fireEvent(): Promise<string> {
  const account = (await api.request('POST', '/processing_accounts', { json: { name: 'Evented' } })).body;
  const event = await api.db('events').where({ object_id: account.id }).first();
  return event.id;
}

t.test('webhook objects: trigger validated, secret shown once, oauth secret never read back', async (t) => {
  const bad = await api.request('POST', '/webhooks', { json: { trigger: 'nope', url: 'http://example.com' } });
  t.equal(bad.status, 400);
  t.match(bad.body.details.trigger, /Must be one of/);
  const badUrl = await api.request('POST', '/webhooks', { json: { trigger: 'payment', url: 'ftp://example.com' } });
  t.same(badUrl.body.details, { url: 'Must be an http(s) URL' });
  const partialOauth = await api.request('POST', '/webhooks', { json: { trigger: 'payment', url: 'https://example.com', oauth_params: { auth_url: 'https://auth.example.com' } } });
  t.same(partialOauth.body.details, { oauth_params: { client_id: 'Required', client_secret: 'Required', grant_type: 'Required' } });
  const created = await api.request('POST', '/webhooks', {
    json: { trigger: 'payment', url: 'https://example.com/hook', oauth_params: { auth_url: 'https://auth.example.com/token', client_id: 'id', client_secret: 'very-secret', grant_type: 'client_credentials' } },
  });
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.match(created.body.sender_secret, /^whsec_/);
  t.equal(created.body.retries, 8);
  t.equal(created.body.status, 'active');
  t.equal(created.body.oauth_params.client_secret, '****');
  const read = await api.request('GET', `/webhooks/${created.body.id}`);
  t.equal(read.body.sender_secret, undefined, 'the secret is shown only in the create response');
  t.equal(read.body.oauth_params.client_secret, '****');
  t.equal(read.body.reference_object, undefined, 'reference_object is non-default');
  const stored = await api.db('webhooks').where({ id: created.body.id }).first();
  t.notMatch(JSON.stringify(stored.data), /very-secret/, 'the OAuth secret is stored sealed');
  t.notMatch(JSON.stringify(stored.data), new RegExp(created.body.sender_secret.slice(6, 20).replace(/[+/]/g, '.')), 'the sender secret is stored sealed');
  t.equal((await api.request('GET', `/webhooks/${created.body.id}/payment_link`)).status, 404);
  t.equal((await api.request('POST', '/webhook_logs', { json: {} })).status, 400, 'logs are read-only');
});

t.test('a sender_secret shorter than 16 characters is refused on every write, and nothing changes', async (t) => {
  const hook = { trigger: 'payment', url: 'https://example.com/short-secret' };
  const multipart = (fields: Record<string, string>) => {
    const data = new FormData();
    for (const [name, value] of Object.entries(fields)) data.set(name, value);
    return data;
  };
  const refusals = [
    await api.request('POST', '/webhooks', { json: { ...hook, sender_secret: 'fifteen-chars15' } }),
    await api.request('POST', '/webhooks', { form: `trigger=payment&url=${encodeURIComponent(hook.url)}&sender_secret=short` }),
    await api.request('POST', '/webhooks', { body: multipart({ ...hook, sender_secret: 'short' }) }),
  ];
  const kept = (await api.request('POST', '/webhooks', { json: { ...hook, sender_secret: 'sixteen-chars-16' } })).body;
  t.type(kept.id, 'string', 'sixteen characters are enough');
  const before = await api.db('webhooks').where({ id: kept.id }).first();
  refusals.push(
    await api.request('PUT', `/webhooks/${kept.id}`, { json: { sender_secret: '' } }),
    await api.request('PUT', `/webhooks/${kept.id}`, { form: 'sender_secret=short' }),
    await api.request('PUT', `/webhooks/${kept.id}`, { body: multipart({ sender_secret: 'short' }) }),
  );
  const byQuery = await api.request('PUT', `/webhooks?mode=query&id=${kept.id}`, { json: { sender_secret: 'short' } });
  t.match(byQuery, { status: 400, body: { error_type: 'InvalidAttributes', details: { values: [{ sender_secret: 'At least 16 characters' }] } } }, 'an update by query, item by item');
  for (const [i, res] of refusals.entries()) t.match(res, { status: 400, body: { error_type: 'InvalidAttributes', details: { sender_secret: 'At least 16 characters' } } }, `write ${i}: ${JSON.stringify(res.body)}`);
  t.equal((await api.db('webhooks').whereRaw(`data->>'url' = ?`, [hook.url])).length, 1, 'no webhook was created by a refused write');
  t.same((await api.db('webhooks').where({ id: kept.id }).first()).data, before.data, 'and the kept one is unchanged');
});

t.test('a delivery is signed over the exact bytes, with the event id and Standard Webhooks headers', async (t) => {
  const receiver = await startReceiver(t);
  const webhook = await webhookFor(receiver.url + '/hook');
  const eventId = await fireEvent();
  const [request] = await receiver.waitFor(1);
  t.ok(request, 'delivered');
  const secret = webhook.sender_secret as string;
  t.equal(request.headers['x-service-signature'], createHmac('sha256', secret).update(request.body).digest('hex'));
  t.equal(request.headers['x-service-event-id'], eventId);
  t.equal(request.headers['webhook-id'], eventId);
  const timestamp = request.headers['webhook-timestamp'] as string;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  t.equal(request.headers['webhook-signature'], `v1,${createHmac('sha256', key).update(`${eventId}.${timestamp}.${request.body}`).digest('base64')}`);
  const body = JSON.parse(request.body);
  t.match(body, { object: 'webhook_trigger', event_id: eventId, trigger: 'processing_status', triggered_on: { object: 'processing_account' } });
  t.type(body.triggered_on.value, 'string', 'the value of a status trigger is the new status itself');
  t.equal(request.headers['content-type'], 'application/json');
  const logs = await eventually(() => logsOf(webhook.id), (values) => values.length > 0);
  t.equal(logs.length, 1, 'the successful attempt is logged too');
  t.match(logs[0], { object: 'webhook_log', http_status: 200, attempt: 1, event_id: eventId });
  await api.request('PUT', `/webhooks/${webhook.id}`, { json: { status: 'disabled' } });
});

t.test('an upgrade gives a delivery job queued with only its delivery_id its event, and drops leftover dispatch_events jobs', async (t) => {
  const receiver = await startReceiver(t);
  const webhook = await webhookFor(receiver.url + '/legacy');
  const eventId = await fireEvent();
  await receiver.waitFor(1);
  const [delivery] = (await api.db.raw(
    `insert into webhook_deliveries (id, org_id, environment, webhook_id, event_id, series, next_attempt_at)
     select 'whd_legacy_' || substr(md5(random()::text), 1, 12), org_id, environment, webhook_id, event_id, 1, now()
       from webhook_deliveries where webhook_id = ? and event_id = ? returning id`, [webhook.id, eventId])).rows;
  // Queued as an older release did, due later, so no worker takes it before the upgrade runs.
  const [legacy] = (await api.db.raw(`select id from graphile_worker.add_job('deliver_webhook', json_build_object('delivery_id', ?::text), run_at => now() + interval '1 hour')`, [delivery.id])).rows;
  await api.db.raw(`select graphile_worker.add_job('dispatch_events', '{}'::json, run_at => now() + interval '1 hour')`);
  const knex = createKnex(api.databaseUrl, 1);
  try {
    await upgradeJobs(knex);
  } finally {
    await knex.destroy();
  }
  const leftover = await api.db.raw(`select count(*)::int as n from graphile_worker._private_jobs j join graphile_worker._private_tasks k on k.id = j.task_id where k.identifier = 'dispatch_events'`);
  t.equal(leftover.rows[0].n, 0, 'no dispatch_events job is left');
  await api.db.raw(`select graphile_worker.reschedule_jobs(array[?::bigint], run_at => now())`, [legacy.id]);
  const got = await receiver.waitFor(2);
  t.equal(got.length, 2, 'delivered again');
  t.equal(got[1].headers['x-service-event-id'], eventId);
  t.match(JSON.parse(got[1].body), { event_id: eventId, trigger: 'processing_status', triggered_on: { object: 'processing_account' } });
  const row = await eventually(() => api.db('webhook_deliveries').where({ id: delivery.id }).first(), (found: any) => found.state !== 'pending');
  t.same([row.state, row.attempts], ['delivered', 1], 'the delivery is recorded');
  await api.request('PUT', `/webhooks/${webhook.id}`, { json: { status: 'disabled' } });
});

t.test('a receiver failing N times gets the event N+1 times with the same id; the logs show every attempt', async (t) => {
  const receiver = await startReceiver(t);
  receiver.respond = (_r, i) => ({ status: i < 3 ? 500 : 200, body: i < 3 ? 'not yet' : 'ok' });
  const webhook = await webhookFor(receiver.url);
  const eventId = await fireEvent();
  const got = await receiver.waitFor(4);
  t.equal(got.length, 4);
  t.same(new Set(got.map((r) => r.headers['x-service-event-id'])), new Set([eventId]));
  const gaps = got.slice(1).map((r, i) => r.at - got[i].at);
  t.ok(gaps[0] >= 70 && gaps[1] >= 150 && gaps[2] >= 220, `retries follow the schedule with jitter (gaps ${gaps.join(', ')} ms)`);
  await eventually(() => logsOf(webhook.id), (values) => values.length >= 4);
  const logs = (await api.request('GET', `/webhooks/${webhook.id}?fields=*,logs`)).body.logs;
  t.same(logs.map((l: any) => [l.attempt, l.http_status]), [[4, 200], [3, 500], [2, 500], [1, 500]], 'newest first');
  t.equal(logs[3].response, 'not yet');
  t.ok(logs[3].next_attempt_at, 'a failed attempt records when the next one is due');
  await api.request('PUT', `/webhooks/${webhook.id}`, { json: { status: 'disabled' } });
});

t.test('the schedule runs out after `retries`, and a resend starts a new series with the same event id', async (t) => {
  const receiver = await startReceiver(t);
  receiver.respond = () => ({ status: 500 });
  const webhook = await webhookFor(receiver.url, { retries: 2 });
  const eventId = await fireEvent();
  await receiver.waitFor(3);
  const logs = await eventually(() => logsOf(webhook.id), (values) => values.length >= 3);
  t.same(logs.map((l) => l.next_attempt_at === null), [true, false, false], 'the third attempt schedules none');
  t.equal(receiver.received.length, 3, 'one attempt plus two retries, then no more');

  receiver.respond = () => ({ status: 200 });
  const resent = await api.request('POST', `/webhooks/${webhook.id}/resend`, { json: { event_id: eventId } });
  t.equal(resent.status, 200, JSON.stringify(resent.body));
  t.equal(resent.body.values[0].series, 1);
  await receiver.waitFor(4);
  t.equal(receiver.received[3].headers['x-service-event-id'], eventId, 'a resend carries the same event id');
  await api.request('PUT', `/webhooks/${webhook.id}`, { json: { status: 'disabled' } });
});

t.test('a redirect is a failed attempt and is not followed', async (t) => {
  const target = await startReceiver(t);
  const redirecting = await startReceiver(t);
  redirecting.respond = () => ({ status: 302, headers: { location: target.url + '/elsewhere' } });
  const webhook = await webhookFor(redirecting.url, { retries: 0 });
  await fireEvent();
  await redirecting.waitFor(1);
  const [log] = await eventually(() => logsOf(webhook.id), (values) => values.length > 0);
  t.match(log, { http_status: 302, error: 'redirects are not followed' });
  t.equal(target.received.length, 0, 'the redirect target got nothing');
  await api.request('PUT', `/webhooks/${webhook.id}`, { json: { status: 'disabled' } });
});

t.test('410 Gone disables the webhook', async (t) => {
  const gone = await startReceiver(t);
  gone.respond = () => ({ status: 410 });
  const goneHook = await webhookFor(gone.url);
  await fireEvent();
  await gone.waitFor(1);
  const after = await eventually(() => api.request('GET', `/webhooks/${goneHook.id}`), (r) => r.body.status !== 'active');
  t.equal(after.body.status, 'disabled');
  t.equal(after.body.disabled_reason, 'The receiver answered 410 Gone');
  t.match(after.body.disabled_at, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
});

t.test('OAuth: concurrent deliveries share one token; a 401 drops it; an expired one is refreshed', async (t) => {
  const auth = await startReceiver(t);
  let issued = 0;
  auth.respond = () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ access_token: `tok${++issued}`, expires_in: 2 }) });
  const receiver = await startReceiver(t);
  let rejectOnce = true;
  receiver.respond = (r) => {
    if (r.headers.authorization === 'Bearer tok1' && rejectOnce && receiver.received.length > 5) {
      rejectOnce = false;
      return { status: 401 };
    }
    return { status: 200 };
  };
  const webhook = await webhookFor(receiver.url, { oauth_params: { auth_url: auth.url + '/token', client_id: 'cid', client_secret: 'csecret', grant_type: 'client_credentials', scope: 'hooks' } });
  await Promise.all(Array.from({ length: 5 }, () => fireEvent()));
  await receiver.waitFor(5);
  t.equal(auth.received.length, 1, 'five concurrent deliveries shared one token request');
  t.same(Object.fromEntries(new URLSearchParams(auth.received[0].body)), { grant_type: 'client_credentials', client_id: 'cid', client_secret: 'csecret', scope: 'hooks' });
  t.ok(receiver.received.slice(0, 5).every((r) => r.headers.authorization === 'Bearer tok1'));
  await fireEvent();
  await receiver.waitFor(7);
  t.equal(receiver.received.length, 7, 'the rejected delivery and its retry, nothing more');
  t.equal(receiver.received[5].headers.authorization, 'Bearer tok1', 'the receiver rejected this one');
  t.equal(receiver.received[6].headers.authorization, 'Bearer tok2', 'a 401 drops the token and retries at once with a new one');
  clockOffsetMs += 2100; // past the 2 s lifetime
  await fireEvent();
  await receiver.waitFor(8);
  t.equal(receiver.received.length, 8);
  t.equal(receiver.received.at(-1)!.headers.authorization, 'Bearer tok3', 'an expired token is refreshed');
  clockOffsetMs = 0;
  t.notMatch(JSON.stringify(await logsOf(webhook.id)), /tok\d|csecret/, 'tokens and secrets never reach the logs');
  await api.request('PUT', `/webhooks/${webhook.id}`, { json: { status: 'disabled' } });
});

t.test('OAuth: a token endpoint that fails is logged as the attempt\'s failure, with its status', async (t) => {
  const auth = await startReceiver(t);
  auth.respond = () => ({ status: 503 });
  const receiver = await startReceiver(t);
  const webhook = await webhookFor(receiver.url, { retries: 0, oauth_params: { auth_url: auth.url + '/token', client_id: 'cid', client_secret: 'other', grant_type: 'client_credentials' } });
  await fireEvent();
  const [failed] = await eventually(() => logsOf(webhook.id), (values) => values.length > 0);
  t.match(failed, { http_status: null, oauth_status: 503 });
  t.equal(receiver.received.length, 0, 'nothing is sent without a token');
  await api.request('PUT', `/webhooks/${webhook.id}`, { json: { status: 'disabled' } });
});

t.test('Retry-After on a 429 sets when the next attempt goes', async (t) => {
  const receiver = await startReceiver(t);
  receiver.respond = (_r, i) => (i === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 });
  const webhook = await webhookFor(receiver.url, { retries: 1 });
  // The worker's clock runs the asked-for second behind, so the retry falls due at once: no waiting.
  clockOffsetMs = -1000;
  await fireEvent();
  const got = await receiver.waitFor(2, 3000);
  clockOffsetMs = 0;
  t.equal(got.length, 2, 'the retry went when due');
  const first = got[0];
  const [log] = (await api.db.raw(`select data->>'next_attempt_at' as next from webhook_logs where data->>'webhook_id' = ? and data->>'attempt' = '1'`, [webhook.id])).rows;
  // The worker set the next attempt 1 s after its own now (first.at − 1 s); the schedule's 100 ms would put it 0.9 s before first.at.
  const setAfterMs = Date.parse(log.next) - (first.at - 1000);
  t.ok(setAfterMs >= 850 && setAfterMs <= 1300, `the next attempt was set 1 s out, as Retry-After asked (${setAfterMs} ms)`);
  await api.request('PUT', `/webhooks/${webhook.id}`, { json: { status: 'disabled' } });
});

t.test('a webhook whose schedules keep running out for WEBHOOK_DISABLE_AFTER is disabled; PUT re-enables it', async (t) => {
  const separate = await startTestApi(t);
  let offsetMs = 0;
  await startTestWorker(t, separate.databaseUrl, { ...WORKER, WEBHOOK_DISABLE_AFTER: '1h' }, { clock: () => new Date(Date.now() + offsetMs) });
  const failing = await startReceiver(t);
  failing.respond = () => ({ status: 500 });
  const witness = await startReceiver(t);
  const hook = async (url: string) => (await separate.request('POST', '/webhooks', { json: { trigger: 'processing_status', url, retries: 0 } })).body;
  const webhook = await hook(failing.url);
  await hook(witness.url);
  const status = async () => (await separate.request('GET', `/webhooks/${webhook.id}`)).body;
  const exhausted = async (n: number) => eventually(() => separate.request('GET', `/webhooks/${webhook.id}/logs`), (r) => answered(r.body.values).length >= n);

  await separate.request('POST', '/processing_accounts', { json: { name: 'A' } });
  await exhausted(1);
  t.equal((await status()).status, 'active', 'one exhausted schedule starts the streak');
  offsetMs += 59 * 60_000;
  await separate.request('POST', '/processing_accounts', { json: { name: 'B' } });
  await exhausted(2);
  t.equal((await status()).status, 'active', 'still within the hour: active');
  offsetMs += 2 * 60_000;
  await separate.request('POST', '/processing_accounts', { json: { name: 'C' } });
  await exhausted(3);
  const disabled = await eventually(status, (body) => body.status !== 'active');
  t.same([disabled.status, disabled.disabled_reason], ['disabled', 'Every retry failed for 1 hour (WEBHOOK_DISABLE_AFTER)'], 'failing for more than the hour: disabled, the reason in words');

  const count = failing.received.length;
  await separate.request('POST', '/processing_accounts', { json: { name: 'D' } });
  await witness.waitFor(4, 3000);
  t.equal(failing.received.length, count, 'a disabled webhook gets nothing (the other webhook got the same event)');
  const states = (await separate.db.raw('select state from webhook_deliveries where webhook_id = ? order by created_at', [webhook.id])).rows.map((r: { state: string }) => r.state);
  t.same(states, ['failed', 'failed', 'failed', 'skipped'], 'and no attempt was made for it: the event is recorded as skipped');
  failing.respond = () => ({ status: 200 });
  const enabled = await separate.request('PUT', `/webhooks/${webhook.id}`, { json: { status: 'active' } });
  t.same([enabled.body.status, enabled.body.disabled_reason], ['active', null]);
  await separate.request('POST', '/processing_accounts', { json: { name: 'E' } });
  await failing.waitFor(count + 1, 3000);
  t.equal(failing.received.length, count + 1, 're-enabled: deliveries resume');
});
