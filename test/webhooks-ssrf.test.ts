import t from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

// The guard is on (the default): loopback receivers must be refused, on the address actually dialled.
const api = await startTestApi(t);
await startTestWorker(t, api.databaseUrl, { WEBHOOK_RETRY_SCHEDULE: '50ms', WORKER_POLL_INTERVAL: '50' });

async function logsAfterOneEvent(webhookId: string) {
  await api.request('POST', '/processing_accounts', { json: { name: 'Evented' } });
  // answered ones: an attempt is logged `in_flight` as its request goes out
  const answered = async () => (await api.request('GET', `/webhooks/${webhookId}/logs`)).body.values.filter((log: { status: string }) => log.status !== 'in_flight');
  return eventually(answered, (logs) => logs.length > 0, 5000, 50);
}

t.test('deliveries to loopback addresses are refused unless the operator allows private targets', async (t) => {
  const receiver = await startReceiver(t);
  for (const url of [receiver.url, receiver.url.replace('127.0.0.1', 'localhost')]) {
    const webhook = (await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url, retries: 0 } })).body;
    const [log] = await logsAfterOneEvent(webhook.id);
    t.match(log, { http_status: null, attempt: 1 }, url);
    t.match(log.error, /refused|not allowed/i, `${url}: ${log.error}`);
    await api.request('PUT', `/webhooks/${webhook.id}`, { json: { status: 'disabled' } });
  }
  t.equal(receiver.received.length, 0, 'nothing reached the receiver');
});

t.test('token requests to private addresses are refused too', async (t) => {
  const auth = await startReceiver(t);
  const webhook = (await api.request('POST', '/webhooks', {
    json: { trigger: 'processing_status', url: 'https://hooks.invalid/', retries: 0, oauth_params: { auth_url: auth.url + '/token', client_id: 'a', client_secret: 'b', grant_type: 'client_credentials' } },
  })).body;
  const [log] = await logsAfterOneEvent(webhook.id);
  t.match(log, { http_status: null, oauth_status: null });
  t.match(log.error, /token request failed/);
  t.equal(auth.received.length, 0, 'the token endpoint was never contacted');
});
