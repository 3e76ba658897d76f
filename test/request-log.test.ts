/**
 * The request log: every API request is a row in the reporting store with the X-Request-Id its
 * response carried, listed, filtered and aggregated by GET /request_logs for the key's own
 * environment only. While reporting is down requests still answer and their rows wait in the web
 * process (bounded), shipped when it is back; rows dropped past the bound are counted in /metrics.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';
import { freshDatabase } from './helpers/db.ts';
import { eventually } from './helpers/wait.ts';
import { startTestReporting, tempDataDir } from './reporting-support.ts';

const databaseUrl = await freshDatabase(t);
const dataDir = tempDataDir(t);
let reporting = await startTestReporting(t, databaseUrl, dataDir, { REPORTING_PORT: '0' });
const reportingUrl = reporting.running.url;
const api = await startTestApi(t, { REPORTING_URL: reportingUrl }, {}, databaseUrl);

async function logs(query = '', key = api.key) {
  const res = await api.request('GET', `/request_logs${query}`, { key });
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body.values as Array<Record<string, any>>;
}

t.test('each request is a row carrying its X-Request-Id, no query values, only for its own environment', async (t) => {
  const sent = performance.now();
  const made = await api.request('POST', '/customers', { json: { name: 'Logged' }, headers: { 'Idempotency-Key': 'idem-1', 'User-Agent': 'settle-test/1' } });
  const roundTripMs = performance.now() - sent;
  const got = await api.request('GET', `/customers/${made.body.id}?email=secret@example.com`);
  const missing = await api.request('GET', '/customers/acct_nope');
  const refused = await api.request('GET', '/customers', { key: null });
  const rows = await logs('?limit=100');
  const byId = new Map(rows.map((r) => [r.id, r]));
  const createdRow = byId.get(made.headers.get('x-request-id')!);
  t.match(createdRow, { object: 'request_log', method: 'POST', route: '/customers', path: '/customers', status: 200, idempotency_key: 'idem-1', user_agent: 'settle-test/1', error_type: null, key_prefix: api.key.slice(0, api.key.length - 24) });
  t.match(createdRow?.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.ok(createdRow?.duration_ms >= 0 && createdRow!.duration_ms <= Math.round(roundTripMs), `the server's time in ms, within the client's round trip (${createdRow?.duration_ms} of ${roundTripMs.toFixed(1)})`);
  t.match(byId.get(got.headers.get('x-request-id')!), { route: '/customers/:id', path: `/customers/${made.body.id}`, status: 200 });
  t.notOk(JSON.stringify(rows).includes('secret@example.com'), 'no query value is logged');
  t.match(byId.get(missing.headers.get('x-request-id')!), { status: 404, error_type: 'NotFound' });
  t.notOk(byId.has(refused.headers.get('x-request-id')!), 'a request of no environment is in no environment\'s log');
  t.notOk(JSON.stringify(rows).includes(api.key), 'never the key itself');
  const other = await api.newKey('other-org', 'test');
  t.notOk((await logs('?limit=1000', other)).some((r) => byId.has(r.id)), 'another org sees none of them');
});

t.test('filters, q, aggregates and group_by as other lists; a request\'s audit events by its id', async (t) => {
  for (let i = 0; i < 3; i++) await api.request('GET', '/customers/acct_missing');
  const made = await api.request('POST', '/customers', { json: { name: 'Audited' } });
  const failed = await logs('?q=status >= 400&limit=100');
  t.ok(failed.length >= 3 && failed.every((r) => r.status >= 400));
  t.ok((await logs('?method=POST&limit=100')).every((r) => r.method === 'POST'));
  const byStatus = await logs('?fields=status,count&group_by=status&order_by=asc(status)');
  const counts = Object.fromEntries(byStatus.map((r) => [r.status, r.count]));
  t.ok(counts[404] >= 4, JSON.stringify(byStatus));
  t.ok(counts[200] >= 2);
  const perHour = await logs('?fields=status,date(created_at),hour(created_at),count&group_by=status,date(created_at),hour(created_at)');
  t.equal(perHour.reduce((n, r) => n + r.count, 0), byStatus.reduce((n, r) => n + r.count, 0) + 1, 'per hour: the same requests (and the one grouping by status)');
  const bad = await api.request('GET', '/request_logs?q=nonsense ==');
  t.equal(bad.status, 400);
  const csv = await fetch(`${api.url}/request_logs?format=csv&q=status >= 400&fields=id,status,path&limit=100`, { headers: { Authorization: `Bearer ${api.key}` } });
  t.match(csv.headers.get('content-type'), /^text\/csv/);
  const lines = (await csv.text()).trim().split('\r\n');
  t.equal(lines[0], 'id,status,path', 'a CSV of the fields asked for');
  t.ok(lines.length >= 4 && lines.slice(1).every((line) => /^req_\w+,4\d\d,\//.test(line)), lines.slice(0, 3).join(' | '));
  const grouped = await fetch(`${api.url}/request_logs?fields=status,count&group_by=status`, { headers: { Authorization: `Bearer ${api.key}`, Accept: 'text/csv' } });
  t.equal((await grouped.text()).split('\r\n')[0], 'status,count', 'aggregates as CSV too');
  const id = made.headers.get('x-request-id');
  const audited = await api.request('GET', `/audit_events?request_id=${id}`);
  t.match(audited.body.values, [{ action: 'create', object_id: made.body.id, request_id: id }]);
});

t.test('while reporting is down requests answer and their rows wait; they arrive when it is back', async (t) => {
  await reporting.stop();
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) {
    const res = await api.request('POST', '/customers', { json: { name: `During outage ${i}` } });
    t.equal(res.status, 200);
    ids.push(res.headers.get('x-request-id')!);
  }
  t.equal((await api.request('GET', '/request_logs')).status, 503, 'the log cannot be read meanwhile');
  t.equal((await api.request('GET', '/request_logs?q=(((')).status, 400, 'a malformed query is still the caller\'s to fix');
  reporting = await startTestReporting(t, databaseUrl, dataDir, { REPORTING_PORT: new URL(reportingUrl).port });
  const seen = await eventually(async () => {
    const res = await api.request('GET', '/request_logs?limit=1000');
    return res.status === 200 ? new Set((res.body.values as Array<{ id: string }>).map((r) => r.id)) : new Set<string>();
  }, (found) => ids.every((id) => found.has(id)), 15000, 200);
  t.ok(ids.every((id) => seen.has(id)), 'every row of the outage arrived');
});

t.test('past its bound the buffer drops the oldest rows and counts them in /metrics', async (t) => {
  const dead = await startTestApi(t, { REPORTING_URL: 'http://127.0.0.1:9', SETTLE_REQUEST_LOG_BUFFER: '5' }, {}, databaseUrl);
  const droppedNow = async () => Number(/^settle_request_log_dropped_total (\d+)/m.exec((await dead.request('GET', '/metrics', { key: null })).body)?.[1] ?? 0);
  const before = await droppedNow();
  for (let i = 0; i < 12; i++) t.equal((await dead.request('GET', '/customers')).status, 200);
  t.equal(await droppedNow() - before, 7, '12 rows into a buffer of 5: 7 dropped');
});
