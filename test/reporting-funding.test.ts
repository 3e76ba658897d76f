/**
 * Funding in reporting (CONTRACT §14, §6): `fee` and `funding_status` are mirrored to ClickHouse
 * with the deposits and chargebacks, so an analyst's net volume by processing account and month
 * comes out the same on both paths and equal to the computed truth.
 */
import t from 'tap';
import { loadConfig } from '../api/config.ts';
import { startWeb } from '../api/server.ts';
import { startTestApi, TEST_REPORTING_SECRET } from './helpers/api.ts';
import { startTestReporting, tempDataDir } from './reporting-support.ts';

const api = await startTestApi(t, { REPORTING_URL: 'off' });
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35' } };
const BANK = { type: 'bank_account', bank_account: { account_number: '123456789', routing_number: '036001808', account_type: 'checking' } };
const shops: string[] = [];
for (const name of ['North', 'South']) {
  const res = await api.request('POST', '/processing_accounts', { json: { name, funding_delay: 0, payment_methods: [BANK] } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  shops.push(res.body.id);
}
const paid = [[100, 50], [20]];
const payments: string[][] = [[], []];
for (const [i, amounts] of paid.entries()) {
  for (const amount of amounts) {
    const res = await api.request('POST', '/transactions', { json: { type: 'payment', amount, processing_id: shops[i], payment_method: CARD } });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    payments[i].push(res.body.id);
  }
}
await api.request('POST', '/transactions', { json: { type: 'refund', amount: 10, ledger: [{ assoc_transaction_id: payments[0][0] }] } });
const moved = await api.request('PUT', '/test_clock', { json: { now: new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 19).replace('T', ' ') } });
if (moved.status !== 200) throw new Error(JSON.stringify(moved.body));

const month = new Date().getUTCMonth() + 1;
// Fees: 100 → 3.20, 50 → 1.75, 20 → 0.88; one deposit per shop of what was processed less refunds and fees.
const truth = [
  { processing_id: shops[0], 'month(created_at)': month, type: 'deposit', 'sum(amount)': 135.05, 'sum(fee)': null, count: 1 },
  { processing_id: shops[0], 'month(created_at)': month, type: 'payment', 'sum(amount)': 150, 'sum(fee)': 4.95, count: 2 },
  { processing_id: shops[0], 'month(created_at)': month, type: 'refund', 'sum(amount)': 10, 'sum(fee)': 0, count: 1 },
  { processing_id: shops[1], 'month(created_at)': month, type: 'deposit', 'sum(amount)': 19.12, 'sum(fee)': null, count: 1 },
  { processing_id: shops[1], 'month(created_at)': month, type: 'payment', 'sum(amount)': 20, 'sum(fee)': 0.88, count: 1 },
].sort((a, b) => (a.processing_id + a.type < b.processing_id + b.type ? -1 : 1));
const QUERY = '/transactions?fields=processing_id,month(created_at),type,sum(amount),sum(fee),count&group_by=processing_id,month(created_at),type&status=processed&limit=100';
const sorted = (values: Array<Record<string, unknown>>) => [...values].sort((a, b) => (String(a.processing_id) + a.type < String(b.processing_id) + b.type ? -1 : 1));

t.test('Postgres path: net volume by processing account and month, with fees and deposits', async (t) => {
  const res = await api.request('GET', QUERY);
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.same(sorted(res.body.values), truth);
  const status = await api.request('GET', '/transactions?fields=funding_status,count&group_by=funding_status&type=payment');
  t.same(status.body.values, [{ funding_status: 'funded', count: 3 }], 'every payment funded');
});

t.test('ClickHouse path: the same figures from the mirror', async (t) => {
  // Port 0: no other test process can take the reporting port between choosing and listening.
  const reporting = await startTestReporting(t, api.databaseUrl, tempDataDir(t), { REPORTING_PORT: '0' });
  const web = await startWeb(loadConfig({ LOG_LEVEL: 'silent', SETTLE_RATE_LIMIT: 'off', DATABASE_URL: api.databaseUrl, PORT: '0', REPORTING_URL: reporting.running.url, REPORTING_SECRET: TEST_REPORTING_SECRET, REPORTING_WAIT: '10000' }), { keyCacheMs: 0 });
  t.teardown(() => web.stop());
  const get = async (path: string) => {
    const res = await fetch(`${web.url}${path}`, { headers: { Authorization: `Basic ${Buffer.from(`${api.key}:`).toString('base64')}` } });
    return { status: res.status, body: (await res.json()) as { values: Array<Record<string, unknown>>; reporting_position?: string } };
  };
  const res = await get(QUERY);
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.ok(res.body.reporting_position, 'answered by the reporting process');
  t.same(sorted(res.body.values), truth);
  const status = await get('/transactions?fields=funding_status,count&group_by=funding_status&type=payment');
  t.same(status.body.values, [{ funding_status: 'funded', count: 3 }], 'funding status mirrored');
});
