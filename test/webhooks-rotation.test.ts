/**
 * Secret rotation (CONTRACT §19): the new secret is shown once; during the overlap
 * `webhook-signature` carries the new and the old signature and `X-Service-Signature` the new
 * one; once the old secret expires (the worker's clock moved, not waited for) only the new one.
 */
import t from 'tap';
import { serviceSignature, standardWebhooksSignature } from '../api/webhooks/signature.ts';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver, type Received } from './helpers/receiver.ts';

const api = await startTestApi(t);
let clockOffsetMs = 0;
await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50' }, { clock: () => new Date(Date.now() + clockOffsetMs) });

async function fireEvent(): Promise<void> {
  await api.request('POST', '/processing_accounts', { json: { name: 'Evented' } });
}

function signatures(request: Received, secrets: string[]): { service: string; standard: string[] } {
  const id = String(request.headers['webhook-id']);
  const timestamp = Number(request.headers['webhook-timestamp']);
  return { service: serviceSignature(secrets[0], request.body), standard: secrets.map((s) => standardWebhooksSignature(s, id, timestamp, request.body)) };
}

t.test('rotate_secret: both signatures during the overlap, only the new one after it', async (t) => {
  const receiver = await startReceiver(t);
  const created = (await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: `${receiver.url}/rotating` } })).body;
  const original = created.sender_secret as string;
  const rotated = await api.request('POST', `/webhooks/${created.id}/rotate_secret`, { json: { previous_expires_in: 3600 } });
  t.equal(rotated.status, 200, JSON.stringify(rotated.body));
  t.match(rotated.body, { object: 'webhook', id: created.id, status: 'active' });
  const fresh = rotated.body.sender_secret as string;
  t.match(fresh, /^whsec_/);
  t.not(fresh, original, 'a new secret');
  t.match(rotated.body.previous_secret_expires_at, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/, 'the answer says when the old secret stops');
  t.equal((await api.request('GET', `/webhooks/${created.id}`)).body.sender_secret, undefined, 'the new secret is shown this once');
  t.notMatch(JSON.stringify((await api.db('webhooks').where({ id: created.id }).first()).data), fresh.slice(6, 20), 'stored sealed');

  await fireEvent();
  const [during] = await receiver.waitFor(1);
  const expected = signatures(during, [fresh, original]);
  t.equal(during.headers['x-service-signature'], expected.service, 'X-Service-Signature: the new secret');
  t.equal(during.headers['webhook-signature'], expected.standard.join(' '), 'webhook-signature: v1,<new> v1,<old>');

  clockOffsetMs = 3601_000;
  await fireEvent();
  const got = await receiver.waitFor(2);
  const after = signatures(got[1], [fresh]);
  t.equal(got[1].headers['webhook-signature'], after.standard[0], 'after the overlap: the new signature alone');
  t.equal(got[1].headers['x-service-signature'], after.service);
  clockOffsetMs = 0;
  await api.request('PUT', `/webhooks/${created.id}`, { json: { status: 'disabled' } });
});

t.test('a second rotation during an overlap ends the oldest secret at once; 0 keeps no overlap', async (t) => {
  const receiver = await startReceiver(t);
  const created = (await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: `${receiver.url}/twice` } })).body;
  const first = (await api.request('POST', `/webhooks/${created.id}/rotate_secret`, { form: 'previous_expires_in=86400' })).body.sender_secret;
  const second = (await api.request('POST', `/webhooks/${created.id}/rotate_secret`, { json: {} })).body.sender_secret;
  await fireEvent();
  const [request] = await receiver.waitFor(1);
  t.equal(request.headers['webhook-signature'], signatures(request, [second, first]).standard.join(' '), 'the newest two only: the original secret signs nothing');
  const third = await api.request('POST', `/webhooks/${created.id}/rotate_secret`, { json: { previous_expires_in: 0 } });
  t.equal(third.body.previous_secret_expires_at, null);
  await fireEvent();
  const got = await receiver.waitFor(2);
  t.equal(got[1].headers['webhook-signature'], signatures(got[1], [third.body.sender_secret]).standard[0], 'no overlap: one signature');
  await api.request('PUT', `/webhooks/${created.id}`, { json: { status: 'disabled' } });
});

t.test('bad previous_expires_in is a 400 that changes nothing; another org\'s webhook is a 404', async (t) => {
  const created = (await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: 'https://example.com/hook' } })).body;
  const before = (await api.db('webhooks').where({ id: created.id }).first()).data;
  for (const bad of [-1, 604801, 1.5, 'soon', true]) {
    const res = await api.request('POST', `/webhooks/${created.id}/rotate_secret`, { json: { previous_expires_in: bad } });
    t.equal(res.status, 400, `previous_expires_in ${JSON.stringify(bad)}`);
    t.match(res.body, { object: 'error', error_type: 'InvalidAttributes', details: { previous_expires_in: /0 to 604800/ } });
  }
  t.equal((await api.request('POST', `/webhooks/${created.id}/rotate_secret`, { json: { expires: 5 } })).status, 400, 'an unknown field');
  t.same((await api.db('webhooks').where({ id: created.id }).first()).data, before, 'nothing changed');
  const otherKey = await api.newKey('globex', 'test');
  const res = await api.request('POST', `/webhooks/${created.id}/rotate_secret`, { key: otherKey, json: {} });
  t.equal(res.status, 404);
  t.equal(res.body.error_type, 'NotFound');
  t.equal((await api.request('POST', `/webhooks/${created.id}/rotate_secret`, { json: { previous_expires_in: 604800 } })).status, 200, 'a week is allowed');
});
