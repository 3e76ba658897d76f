/**
 * The reporting mirror and query server through the API, against embedded ClickHouse (chdb):
 * every kind of transaction change lands, read-your-writes holds without sleeping, a restart
 * resumes from the recorded position, and bad queries are 400s that never show ClickHouse text.
 */
import tap from 'tap';

const t = tap;
import { loadConfig } from '../api/config.ts';
import { rows } from '../api/db/connection.ts';
import { rebuildThroughProcess } from '../reporting/rebuild.ts';
import { startTestApi, startTestWorker, TEST_REPORTING_AUTH, TEST_REPORTING_SECRET } from './helpers/api.ts';
import { LEAK_PATTERN, reservePort, startTestReporting, tempDataDir, type ReportingHandle } from './reporting-support.ts';
import { eventually } from './helpers/wait.ts';

const port = await reservePort();
const env = { REPORTING_URL: `http://127.0.0.1:${port}`, REPORTING_PORT: String(port), REPORTING_WAIT: '2000', SETTLE_PROCESSING_DELAY: '50' };
const api = await startTestApi(t, env);
await startTestWorker(t, api.databaseUrl, { WORKER_POLL_INTERVAL: '100', SETTLE_PROCESSING_DELAY: '50' });
const dataDir = tempDataDir(t);
let reporting: ReportingHandle = await startTestReporting(t, api.databaseUrl, dataDir, env);

const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };
const processing = (await api.request('POST', '/processing_accounts', { json: { name: 'Shop' } })).body;
const customer = (await api.request('POST', '/customers', { json: { name: 'Payer', email: 'payer@example.com' } })).body;
const authKey = await api.newKey('acme', 'test', { authorize_and_capture: true });

async function pay(amount: number, extra: Record<string, unknown> = {}, key?: string) {
  const res = await api.request('POST', '/transactions', { key, json: { type: 'payment', amount, customer_id: customer.id, payment_method: CARD, ...extra } });
  if (res.status !== 200) throw new Error(`payment failed: ${JSON.stringify(res.body)}`);
  return res.body;
}

function query(params: Record<string, string>, version = 'v1', key?: string) {
  return api.request('GET', `/transactions?${new URLSearchParams(params)}`, { version, key });
}

/** What Postgres holds for the tenant, grouped by status: the truth the mirror must show. */
async function truthByStatus(): Promise<Array<{ status: string; count: number; 'sum(amount)': number }>> {
  const found = await rows<{ status: string; count: number; total: string }>(api.db,
    `select t.data->>'status' as status, count(*)::bigint as count, sum((t.data->>'amount')::bigint)::text as total
       from transactions t join orgs o on o.id = t.org_id
      where o.name = 'acme' and t.environment = 'test' group by 1 order by 1`);
  return found.map((r) => ({ status: r.status, count: Number(r.count), 'sum(amount)': Number(r.total) / 100 }));
}

async function byStatus(): Promise<unknown> {
  const res = await query({ fields: 'status,count,sum(amount)', group_by: 'status', order_by: 'status' });
  if (res.status !== 200) throw new Error(`aggregate failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.values;
}

t.test('creates, captures, voids and refunds are visible at once (read-your-writes)', async (t) => {
  await pay(10.5);
  t.same(await byStatus(), await truthByStatus(), 'a processed payment, read right after its create');
  const authorized = await pay(20, {}, authKey);
  t.equal(authorized.status, 'authorized');
  t.same(await byStatus(), await truthByStatus(), 'an authorization');
  await api.request('PUT', `/transactions/${authorized.id}`, { key: authKey, json: { status: 'processed' } });
  t.same(await byStatus(), await truthByStatus(), 'its capture');
  const toVoid = await pay(7.25);
  await api.request('PUT', `/transactions/${toVoid.id}`, { json: { status: 'voided' } });
  t.same(await byStatus(), await truthByStatus(), 'a void');
  const refunded = await pay(100);
  const refund = await api.request('POST', '/transactions', { json: { type: 'refund', amount: 30, ledger: [{ assoc_transaction_id: refunded.id }] } });
  t.equal(refund.status, 200);
  const byType = await query({ fields: 'type,count,sum(amount)', group_by: 'type', order_by: 'type' });
  t.same(byType.body.values, [{ type: 'payment', count: 4, 'sum(amount)': 137.75 }, { type: 'refund', count: 1, 'sum(amount)': 30 }]);
  t.match(byType.body.reporting_position, /^\d+:\d+:[\d,]*$/, 'the answer carries the position it reflects (a Postgres snapshot)');
  t.match(byType.headers.get('server-timing'), /^mirror_wait;dur=\d+(\.\d)?, clickhouse;dur=\d+(\.\d)?;desc="rollup( months)?"$/,
    'and says where its time went: waiting for the mirror, then ClickHouse, which read the rollup (by type: covered)');
  const byDay = await query({ fields: 'date(created_at),count', group_by: 'date(created_at)' });
  t.match(byDay.headers.get('server-timing'), /desc="rollup"$/, 'by day: the rollup\'s day rows');
  const byRegion = await query({ fields: 'attrs[region],count', group_by: 'attrs[region]' });
  t.match(byRegion.headers.get('server-timing'), /desc="mirror"$/, 'a grouping the rollup does not keep reads the mirror');
});

t.test('a v2 payment is in the mirror with its processed status', async (t) => {
  const v2 = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'payment', amount: 5, sender: { account_id: customer.id, method: CARD }, receiver: { account_id: processing.id } } });
  t.equal(v2.body.status.value, 'processed');
  const values = await eventually(async () => (await query({ fields: 'status.value,count', group_by: 'status.value', q: `id == "${v2.body.id}"` }, 'v2')).body.values,
    (seen: any[]) => seen[0]?.['status.value'] === 'processed', 5000, 50);
  t.same(values, [{ 'status.value': 'processed', count: 1 }], 'v2 status.value, read from the mirror');
});

t.test('a change without an event (attrs, description) is mirrored too', async (t) => {
  const payment = await pay(3);
  const res = await api.request('PUT', `/transactions/${payment.id}`, { json: { attrs: { region: 'eu-west', tier: 'gold' }, description: 'Order 7' } });
  t.equal(res.status, 200, JSON.stringify(res.body));
  const grouped = await query({ fields: 'attrs[region],count,sum(amount)', group_by: 'attrs[region]', q: 'attrs.tier == "gold"' });
  t.same(grouped.body.values, [{ 'attrs[region]': 'eu-west', count: 1, 'sum(amount)': 3 }]);
  const described = await query({ fields: 'count', description: 'Order 7' });
  t.same(described.body.values, [{ count: 1 }]);
});

t.test('a deleted transaction leaves the mirror (tombstone)', async (t) => {
  const payment = await pay(999.99);
  t.same(await byStatus(), await truthByStatus());
  await rows(api.db, 'delete from transactions where id = ?', [payment.id]);
  t.same(await byStatus(), await truthByStatus(), 'the deleted row no longer counts');
  const gone = await query({ fields: 'count', id: payment.id });
  t.same(gone.body.values, [{ count: 0 }]);
});

t.test('another tenant sees none of it', async (t) => {
  const other = await api.newKey('globex', 'test');
  const res = await query({ fields: 'count,sum(amount)' }, 'v1', other);
  t.same(res.body.values, [{ count: 0, 'sum(amount)': null }]);
  const live = await api.newKey('acme', 'live');
  t.same((await query({ fields: 'count' }, 'v1', live)).body.values, [{ count: 0 }], 'nor the live environment of the same org');
});

t.test('money sums are exact: no float drift over many cents', async (t) => {
  for (let i = 0; i < 10; i += 1) await pay(0.1, { attrs: { batch: 'cents' } });
  const res = await query({ fields: 'sum(amount),avg(amount),count', q: 'attrs[batch] == "cents"' });
  t.same(res.body.values, [{ 'sum(amount)': 1, 'avg(amount)': 0.1, count: 10 }]);
});

t.test('healthz reports role, position and lag', async (t) => {
  const res = await fetch(`${reporting.running.url}/healthz`, { headers: TEST_REPORTING_AUTH });
  const body = await res.json() as Record<string, unknown>;
  t.equal(res.status, 200);
  t.equal(body.role, 'leader');
  t.match(body.position, /^\d+:\d+:[\d,]*$/);
  t.type(body.lag_ms, 'number');
});

t.test('a restart resumes from the recorded position: nothing lost while down', async (t) => {
  const before = reporting.running.mirror()!.status.rowsMirrored;
  t.ok(before > 0);
  await reporting.stop();
  const down = await query({ fields: 'count' });
  t.equal(down.status, 503, 'no reporting process: 503, not a stale answer');
  t.equal(down.body.error_type, 'ServiceUnavailable');
  const whileDown = await pay(42);
  await api.request('PUT', `/transactions/${whileDown.id}`, { json: { status: 'voided' } });
  reporting = await startTestReporting(tap, api.databaseUrl, dataDir, env);
  t.same(await byStatus(), await truthByStatus(), 'changes made while down are there');
  const copied = reporting.running.mirror()!.status.rowsMirrored;
  t.ok(copied >= 1 && copied < 5, `resumed with the missed change only (${copied} rows), not a full copy`);
});

t.test('read-your-writes does not wait for an unrelated transaction left open', async (t) => {
  const open = await api.db.transaction();
  await open.raw("insert into orgs (id, name) values ('org_idle', 'idle in transaction')");
  const payment = await pay(2.5, { attrs: { batch: 'while-open' } });
  // Waiting on the open transaction would end in a 503 after REPORTING_WAIT: the answer itself shows it did not wait.
  const res = await query({ fields: 'count,sum(amount)', q: 'attrs.batch == "while-open"' });
  t.equal(res.status, 200, 'answered, not 503 after REPORTING_WAIT');
  t.same(res.body.values, [{ count: 1, 'sum(amount)': 2.5 }], `the payment made after it is there (${payment.id})`);
  await open.rollback();
});

t.test('a transaction that commits late, after newer ones were mirrored, is not skipped', async (t) => {
  const [{ id: orgId }] = await rows<{ id: string }>(api.db, "select id from orgs where name = 'acme'");
  const late = await api.db.transaction();
  await late.raw(`insert into transactions (id, org_id, environment, type, data) values ('txn_latecommit0000000000', ?, 'test', 'payment', '{"amount": 777, "status": "processed", "attrs": {"batch": "late"}}')`, [orgId]);
  await pay(4, { attrs: { batch: 'late' } });
  const before = await query({ fields: 'count,sum(amount)', q: 'attrs.batch == "late"' });
  t.same(before.body.values, [{ count: 1, 'sum(amount)': 4 }], 'the newer payment is mirrored, the open one not yet visible');
  await late.commit();
  const after = await query({ fields: 'count,sum(amount)', q: 'attrs.batch == "late"' });
  t.same(after.body.values, [{ count: 2, 'sum(amount)': 11.77 }], 'once committed, the older transaction is mirrored too');
});

t.test('a mirror that cannot keep up answers 503 after REPORTING_WAIT, never a stale answer', async (t) => {
  await pay(1);
  const blocker = await api.db.transaction();
  // The mirror's next read of the change feed waits behind this lock.
  await blocker.raw('lock table reporting_changes in access exclusive mode');
  const started = Date.now();
  const blocked = await query({ fields: 'count' });
  t.equal(blocked.status, 503);
  t.ok(Date.now() - started >= 1900, 'after waiting REPORTING_WAIT');
  t.match(blocked.body.error_description, /caught up/);
  await blocker.rollback();
  t.same(await byStatus(), await truthByStatus(), 'answers again once the mirror moves');
});

t.test('bad input is a 400 with a clear message, never ClickHouse text', async (t) => {
  const cases: Array<[string, Record<string, string>]> = [
    ['unknown field', { fields: 'nope,count', group_by: 'nope' }],
    ['unknown field in a filter', { fields: 'count', q: 'nope == 1' }],
    ['unknown function', { fields: 'count', group_by: 'frobnicate(amount)' }],
    ['aggregate inside a filter', { fields: 'count', q: 'sum(amount) > 5' }],
    ['aggregate as a filter key', { fields: 'count', 'sum(amount)': '>5' }],
    ['plain field beside an aggregate', { fields: 'status,sum(amount)' }],
    ['nested aggregate', { fields: 'sum(count(amount))' }],
    ['type mismatch: amount vs text', { fields: 'count', q: 'amount > "abc"' }],
    ['type mismatch: date', { fields: 'count', q: 'created_at > "yesterday"' }],
    ['type mismatch: two fields', { fields: 'count', q: 'created_at > description' }],
    ['sum of text', { fields: 'sum(description)' }],
    ['date function on a number', { fields: 'count', group_by: 'year(amount)' }],
    ['not a condition', { fields: 'count', q: 'status' }],
    ['order by a field neither grouped nor aggregated', { fields: 'status,count', group_by: 'status', order_by: 'desc(created_at)' }],
    ['count of a value', { fields: 'count(1)' }],
    ['json field not mirrored', { fields: 'count', group_by: 'payment_method' }],
    ['amount out of range', { fields: 'count', q: 'amount > 1e300' }],
    ['q syntax error', { fields: 'count', q: 'amount >' }],
    ['injection in q', { fields: 'count', q: "status == 'x') OR 1=1 --" }],
    ['injection in a field name', { fields: 'count', group_by: 'status; DROP TABLE transactions' }],
    ['injection in a function', { fields: 'sum(amount) FROM system.tables --' }],
    ['injection in order_by', { fields: 'status,count', group_by: 'status', order_by: 'desc(status), (SELECT 1)' }],
  ];
  for (const [name, params] of cases) {
    const res = await query(params);
    t.equal(res.status, 400, `${name}: ${JSON.stringify(res.body)}`);
    t.equal(res.body.object, 'error', name);
    t.notMatch(JSON.stringify(res.body), LEAK_PATTERN, `${name}: no engine text`);
  }
});

t.test('injection attempts in values are bound, so they match nothing and break nothing', async (t) => {
  const hostile = ["'); DROP TABLE settle.transactions; --", "x' OR '1'='1", '\\', "{p0:String}", "\t\n'\"", 'attrs[x]'];
  for (const value of hostile) {
    const inQ = await query({ fields: 'count', q: `description == ${JSON.stringify(value)}` });
    t.same(inQ.body.values, [{ count: 0 }], `q value ${JSON.stringify(value)}`);
    const inFilter = await query({ fields: 'count', 'attrs[region]': value });
    t.same(inFilter.body.values, [{ count: 0 }], `attrs filter value ${JSON.stringify(value)}`);
    const inName = await query({ fields: `count,count(attrs[${JSON.stringify(value)}])`, q: `attrs[${JSON.stringify(value)}] != null` });
    t.same(inName.body.values, [{ count: 0, [`count(attrs[${JSON.stringify(value)}])`]: 0 }], `attrs name ${JSON.stringify(value)}: ${JSON.stringify(inName.body)}`);
    const like = await query({ fields: 'count', description: `?*${value}*` });
    t.same(like.body.values, [{ count: 0 }], `like pattern ${JSON.stringify(value)}`);
  }
  t.same(await byStatus(), await truthByStatus(), 'the mirror is intact');
});

t.test('settle reporting rebuild through the running process: progress, then the same answers', async (t) => {
  const seen: number[] = [];
  const final = await rebuildThroughProcess(loadConfig({ REPORTING_URL: env.REPORTING_URL, REPORTING_SECRET: TEST_REPORTING_SECRET }), (p) => seen.push(p.done));
  const [{ n }] = await rows<{ n: number }>(api.db, 'select count(*)::int as n from transactions');
  t.equal(final?.done, n, 'every stored transaction copied');
  t.ok(seen.length >= 1, 'progress reported');
  t.same(await byStatus(), await truthByStatus(), 'answers unchanged after the swap');
  const after = await pay(8);
  t.same(await byStatus(), await truthByStatus(), `the mirror follows on from the rebuild (${after.id})`);
});
