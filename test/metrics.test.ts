/**
 * `/metrics` in Prometheus text on web, worker and reporting: requests by route template and
 * status, deliveries by outcome, the job queue, the mirror.
 */
import t from 'tap';
import { eventually } from './helpers/wait.ts';
import { freePort } from '../api/db/embedded.ts';
import { startTestApi, startTestWorker, TEST_REPORTING_AUTH } from './helpers/api.ts';
import { startReceiver } from './helpers/receiver.ts';
import { startTestReporting, tempDataDir } from './reporting-support.ts';

/** before any row exists: no commit the mirror copies is older */
const testStarted = Date.now();
const api = await startTestApi(t);
const workerPort = await freePort();
await startTestWorker(t, api.databaseUrl, { WORKER_METRICS_PORT: String(workerPort), HOST: '127.0.0.1', WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50' });

/** The value of one series, matched by its name and labels (all given labels must be present). */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.split(' ').at(-1));
  }
  return undefined;
}

t.test('web: requests are counted and timed by route template and status, never by raw id', async (t) => {
  const customer = (await api.request('POST', '/customers', { json: { name: 'M' } })).body;
  await api.request('GET', `/customers/${customer.id}`);
  await api.request('GET', '/customers/acct_missing');
  await api.request('GET', '/no_such_collection_here/x/y');
  const res = await fetch(`${api.url}/metrics`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /text\/plain/);
  const text = await res.text();
  t.ok(sample(text, 'settle_http_requests_total', { method: 'POST', route: '/customers', status: '200' })! >= 1, 'POST /customers 200');
  t.ok(sample(text, 'settle_http_requests_total', { method: 'GET', route: '/customers/:id', status: '200' })! >= 1, 'GET /customers/:id 200');
  t.ok(sample(text, 'settle_http_requests_total', { method: 'GET', route: '/customers/:id', status: '404' })! >= 1, 'GET /customers/:id 404');
  t.ok(sample(text, 'settle_http_request_duration_seconds_count', { method: 'POST', route: '/customers' })! >= 1, 'latency histogram');
  t.notMatch(text, customer.id, 'no object id in any label');
  t.notMatch(text, 'no_such_collection_here', 'unknown paths are not labels');
});

t.test('worker: deliveries by outcome and the job queue, on WORKER_METRICS_PORT', async (t) => {
  const receiver = await startReceiver(t);
  await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: receiver.url } });
  await api.request('POST', '/processing_accounts', { json: { name: 'Metered' } });
  await receiver.waitFor(1);
  t.equal(receiver.received.length, 1);
  const text = await eventually(async () => (await fetch(`http://127.0.0.1:${workerPort}/metrics`)).text(),
    (seen) => (sample(seen, 'settle_webhook_deliveries_total', { outcome: 'delivered' }) ?? 0) >= 1, 2500, 50);
  t.ok(sample(text, 'settle_webhook_deliveries_total', { outcome: 'delivered' })! >= 1, 'a delivered attempt');
  t.ok(sample(text, 'settle_webhook_delivery_duration_seconds_count', { outcome: 'delivered' })! >= 1);
  t.match(text, /# TYPE settle_job_queue_depth gauge/);
  t.match(text, /# TYPE settle_job_queue_lag_seconds gauge/);
  t.equal((await fetch(`http://127.0.0.1:${workerPort}/other`)).status, 404);
});

t.test('reporting: the mirror\'s role, lag and rows on its /metrics', async (t) => {
  const reporting = await startTestReporting(t, api.databaseUrl, tempDataDir(t));
  const url = reporting.running.url;
  const paid = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 5, payment_method: { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } } } });
  t.equal(paid.status, 200, 'a transaction to mirror');
  const text = await eventually(async () => (await fetch(`${url}/metrics`, { headers: TEST_REPORTING_AUTH })).text(),
    (seen) => sample(seen, 'settle_reporting_leader', {}) === 1 && (sample(seen, 'settle_reporting_rows_mirrored', {}) ?? 0) >= 1, 10_000, 100);
  t.equal(sample(text, 'settle_reporting_leader', {}), 1, 'this process mirrors');
  t.ok((sample(text, 'settle_reporting_rows_mirrored', {}) ?? 0) >= 1, 'the transaction is counted');
  const lag = sample(text, 'settle_reporting_mirror_lag_seconds', {});
  t.ok(lag !== undefined && lag >= 0 && lag <= (Date.now() - testStarted) / 1000, `a lag in seconds, no older than the oldest row (${lag})`);
});
