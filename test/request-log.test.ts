/**
 * The request log: every API request is a row in the reporting store with the X-Request-Id its
 * response carried, listed, filtered and aggregated by GET /request_logs for the key's own
 * environment only. While reporting is down requests still answer and their rows wait in the web
 * process (bounded), shipped when it is back; rows dropped past the bound are counted in /metrics.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { loadConfig } from '../api/config.ts';
import { INGEST_MAX_ROWS } from '../reporting/requestLog.ts';
import { openStore } from '../reporting/store.ts';
import { startTestApi, TEST_REPORTING_AUTH } from './helpers/api.ts';
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

/** the first test's first request: the key's org is the one whose rows the last test counts */
let firstRequestId = '';

t.test('each request is a row carrying its X-Request-Id, no query values, only for its own environment', async (t) => {
  const sent = performance.now();
  const made = await api.request('POST', '/customers', { json: { name: 'Logged' }, headers: { 'Idempotency-Key': 'idem-key-kept-out-of-the-log', 'User-Agent': 'settle-test/1' } });
  const roundTripMs = performance.now() - sent;
  const retried = await api.request('POST', '/customers', { json: { name: 'Logged' }, headers: { 'Idempotency-Key': 'idem-key-kept-out-of-the-log' } });
  const got = await api.request('GET', `/customers/${made.body.id}?email=secret@example.com`);
  const missing = await api.request('GET', '/customers/acct_nope');
  const refused = await api.request('GET', '/customers', { key: null });
  const pasted = await api.request('GET', `/customers/${api.key}`);
  const rows = await logs('?limit=100');
  const byId = new Map(rows.map((r) => [r.id, r]));
  firstRequestId = made.headers.get('x-request-id')!;
  const createdRow = byId.get(firstRequestId);
  t.match(createdRow, { object: 'request_log', method: 'POST', route: '/customers', path: '/customers', status: 200, idempotency_key: /^sha256:[0-9a-f]{16}$/, user_agent: 'settle-test/1', error_type: null, key_prefix: api.key.slice(0, api.key.length - 24) });
  t.equal(byId.get(retried.headers.get('x-request-id')!)?.idempotency_key, createdRow?.idempotency_key, 'a retry shows the same fingerprint');
  t.notOk(JSON.stringify(rows).includes('idem-key-kept-out-of-the-log'), 'never the idempotency key itself');
  t.match(createdRow?.created_at, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/, 'the timestamp format of every object, no fraction');
  t.ok(createdRow?.duration_ms >= 0 && createdRow!.duration_ms <= Math.round(roundTripMs), `the server's time in ms, within the client's round trip (${createdRow?.duration_ms} of ${roundTripMs.toFixed(1)})`);
  t.match(byId.get(got.headers.get('x-request-id')!), { route: '/customers/:id', path: `/customers/${made.body.id}`, status: 200 });
  t.notOk(JSON.stringify(rows).includes('secret@example.com'), 'no query value is logged');
  t.match(byId.get(missing.headers.get('x-request-id')!), { status: 404, error_type: 'NotFound' });
  t.notOk(byId.has(refused.headers.get('x-request-id')!), 'a request of no environment is in no environment\'s log');
  t.equal(byId.get(pasted.headers.get('x-request-id')!)?.path, `/customers/${api.key.slice(0, api.key.length - 24)}…`, 'a key pasted into a path is kept as its shown prefix');
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
  const webhook = (await api.request('POST', '/webhooks', { json: { trigger: 'payment', url: 'https://example.com/hook' } })).body;
  await api.request('PUT', `/webhooks/${webhook.id}`, { json: { status: 'disabled' } });
  const history = (await api.request('GET', `/audit_events?object_id=${webhook.id}`)).body.values;
  t.ok(history.length >= 2, 'the webhook\'s create and update are audited');
  const times = JSON.stringify(history).match(/\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d[^"]*/g) ?? [];
  t.ok(times.length >= history.length, `timestamps shown: ${times.join(', ')}`);
  t.same(times.filter((time) => !/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(time)), [], 'every timestamp of an audit event, its changes too, in the one format');
});

t.test('reporting stores a batch as web processes ship it, whole or not at all', async (t) => {
  const tenant = { orgId: 'org_batches', environment: 'test' };
  const post = (body: string, type = 'application/x-ndjson') => fetch(`${reportingUrl}/request_logs`, { method: 'POST', headers: { 'Content-Type': type, ...TEST_REPORTING_AUTH }, body });
  const stored = async () => {
    const res = await fetch(`${reportingUrl}/request_logs/query`, { method: 'POST', headers: TEST_REPORTING_AUTH, body: JSON.stringify({ tenant, version: 'v1', params: [['limit', '100']] }) });
    return ((await res.json()) as { values: Array<{ id: string; status: number; created_at: string }> }).values.map((r) => `${r.id} ${r.status} ${r.created_at}`).sort();
  };
  const line = (values: unknown[]) => `${JSON.stringify(values)}\n`;
  const names = ['org_id', 'environment', 'id', 'method', 'route', 'path', 'status', 'duration_ms', 'ip', 'user_agent', 'created_at'];
  const row = (id: string, status: unknown) => line(['org_batches', 'test', id, 'GET', '/customers/:id', '/customers/acct_1', status, 3, '127.0.0.1', 'ua "quoted"', '2026-11-26 08:00:00.125']);
  const good = await post(line(names) + row('req_b1', 200) + row('req_b2', 404));
  t.same([good.status, await good.json()], [200, { stored: 2 }]);
  const unterminated = await post(line(names) + row('req_b8', 200).trimEnd());
  t.same([unterminated.status, await unterminated.json()], [200, { stored: 1 }], 'a last row without its newline is a row');
  const oneBad = await post(line(names) + row('req_b3', 200) + row('req_b4', 'two hundred'));
  t.equal(oneBad.status, 400, 'a row the store cannot read refuses its batch');
  t.match(await oneBad.json(), { error_type: 'BadRequest' });
  for (const [head, why] of [[line([...names, 'secret']), 'an unknown column'], [line(['org_id', 'org_id', 'id']), 'a column twice'], ['{"columns":', 'no names line']] as const) {
    t.equal((await post(head + row('req_b5', 200))).status, 400, why);
  }
  const tooMany = await post(line(names) + row('req_b6', 200).repeat(INGEST_MAX_ROWS + 1));
  t.equal(tooMany.status, 413, 'more rows than one batch may hold');
  // A web process of an earlier release ships {columns, rows}, the time in epoch milliseconds.
  const earlier = await post(JSON.stringify({ columns: ['org_id', 'environment', 'id', 'method', 'route', 'path', 'status', 'duration_ms', 'key_prefix', 'idempotency_key', 'api_version', 'error_type', 'ip', 'user_agent', 'created_at'],
    rows: [['org_batches', 'test', 'req_b7', 'GET', '/customers', '/customers', 200, 1, null, null, 'v1', null, '127.0.0.1', 'ua', Date.parse('2026-11-26T08:00:01.500Z')]] }), 'application/json');
  t.equal(earlier.status, 200);
  t.same(await stored(), ['req_b1 200 2026-11-26 08:00:00', 'req_b2 404 2026-11-26 08:00:00', 'req_b7 200 2026-11-26 08:00:01', 'req_b8 200 2026-11-26 08:00:00'],
    'the good batches, every row, and nothing of the refused ones');
  // The embedded store reads each batch from a spool file (reporting/store.ts): none stays behind.
  const spooled = fs.readdirSync(path.join(dataDir, 'clickhouse-spool'), { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
  t.same(spooled.map((entry) => entry.name), [], 'no spool file left, of a stored batch or a refused one');
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
  // An insert a stopped process did not finish leaves its spool file; the next process to open
  // the store removes it, and leaves a running process's alone.
  const spoolOf = (pid: number) => path.join(dataDir, 'clickhouse-spool', String(pid));
  const stopped = spawnSync(process.execPath, ['-e', 'process.pid']).pid!;
  // This test's parent process stands for another running one (reporting runs in this process).
  const other = process.ppid;
  for (const pid of [stopped, other]) {
    fs.mkdirSync(spoolOf(pid), { recursive: true });
    fs.writeFileSync(path.join(spoolOf(pid), '1.rows'), '["unfinished"]\n');
  }
  reporting = await startTestReporting(t, databaseUrl, dataDir, { REPORTING_PORT: new URL(reportingUrl).port });
  t.notOk(fs.existsSync(spoolOf(stopped)), 'a stopped process\'s spool is removed');
  t.ok(fs.existsSync(path.join(spoolOf(other), '1.rows')), 'a running process\'s is left alone');
  fs.rmSync(spoolOf(other), { recursive: true });
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

t.test('a table of an earlier release, with LowCardinality columns, keeps its rows and becomes plain', async (t) => {
  await reporting.stop(); // the outage test's process stopped with it; the web process keeps its rows meanwhile
  const config = loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: dataDir });
  const inStore = async <T>(sql: string) => {
    const store = openStore(config);
    try {
      return await store.select<T>(sql.replaceAll('$db', store.database));
    } finally {
      await store.close();
    }
  };
  const columnsNow = () => inStore<{ name: string; type: string }>(`SELECT name, type FROM system.columns WHERE database = '$db' AND table = 'request_logs' AND name IN ('org_id', 'environment', 'method', 'api_version') ORDER BY name`);
  const old = openStore(config);
  await old.command(`ALTER TABLE ${old.database}.request_logs MODIFY COLUMN org_id LowCardinality(String), MODIFY COLUMN environment LowCardinality(String), MODIFY COLUMN method LowCardinality(String), MODIFY COLUMN api_version LowCardinality(Nullable(String)) SETTINGS mutations_sync = 1`);
  await old.close();
  t.equal((await columnsNow()).filter((c) => c.type.startsWith('LowCardinality')).length, 4, 'the earlier release\'s table');
  const [{ rows: before }] = await inStore<{ rows: string }>(`SELECT count() AS rows FROM $db.request_logs WHERE org_id IN (SELECT org_id FROM $db.request_logs WHERE id = '${firstRequestId}')`);
  reporting = await startTestReporting(t, databaseUrl, dataDir, { REPORTING_PORT: new URL(reportingUrl).port });
  const seen = (await logs('?limit=1000')).length;
  t.ok(seen > Number(before), `its rows and the new ones (${before}, then ${seen})`);
  await reporting.stop();
  t.same(await columnsNow(), [{ name: 'api_version', type: 'Nullable(String)' }, { name: 'environment', type: 'String' }, { name: 'method', type: 'String' }, { name: 'org_id', type: 'String' }]);
  const [{ engine }] = await inStore<{ engine: string }>(`SELECT engine_full AS engine FROM system.tables WHERE database = '$db' AND name = 'request_logs'`);
  t.match(engine, /merge_selector_base = 20/, 'its parts merge in bigger steps');
});
