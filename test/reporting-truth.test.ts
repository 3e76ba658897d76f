/**
 * Transaction aggregates against computed truth, on both reporting paths (Postgres in the web
 * process, ClickHouse in the reporting process): averages, standard deviations and variances of
 * money are in major units (the variance in units squared) and not rounded to the cent; sums,
 * minima and maxima are exact cents; billing fields (`trigger`, `payment_link_id`) group.
 */
import t, { type Test } from 'tap';
import { loadConfig } from '../api/config.ts';
import { startWeb } from '../api/server.ts';
import { startTestApi, TEST_REPORTING_SECRET } from './helpers/api.ts';
import { startTestReporting, tempDataDir } from './reporting-support.ts';

const AMOUNTS = [10, 20, 30.01, 250.03, 0.07];
const mean = AMOUNTS.reduce((a, b) => a + b, 0) / AMOUNTS.length;
const variance = AMOUNTS.reduce((a, b) => a + (b - mean) ** 2, 0) / (AMOUNTS.length - 1);
const truth = { 'sum(amount)': 310.11, 'avg(amount)': mean, 'stddev(amount)': Math.sqrt(variance), 'variance(amount)': variance, 'min(amount)': 0.07, 'max(amount)': 250.03 };
const FIELDS = Object.keys(truth).join(',');

// The Postgres path: transaction aggregates answered by the web process itself.
const api = await startTestApi(t, { REPORTING_URL: 'off' });
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35' } };
await api.request('POST', '/processing_accounts', { json: { name: 'Shop' } });
for (const amount of AMOUNTS) {
  const res = await api.request('POST', '/transactions', { json: { type: 'payment', amount, payment_method: CARD, attrs: { batch: 'stats' } } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
}

function near(t: Test, actual: Record<string, unknown>, label: string): void {
  for (const [key, expected] of Object.entries(truth)) {
    const value = Number(actual[key]);
    t.ok(Math.abs(value - expected) <= 1e-9 * Math.max(1, Math.abs(expected)), `${label} ${key}: ${value} ≈ ${expected}`);
  }
}

t.test('Postgres path: money statistics match the computed truth', async (t) => {
  const res = await api.request('GET', `/transactions?fields=${FIELDS}&attrs[batch]=stats`);
  t.equal(res.status, 200, JSON.stringify(res.body));
  near(t, res.body.values[0], 'postgres');
  const grouped = await api.request('GET', '/transactions?fields=trigger,payment_link_id,count&group_by=trigger,payment_link_id&attrs[batch]=stats');
  t.same(grouped.body.values, [{ trigger: 'manual', payment_link_id: null, count: 5 }], 'grouped by trigger and payment link');
  t.not(res.body.values[0]['avg(amount)'], 62.02, 'the average is not rounded to the cent');
});

t.test('ClickHouse path: the same truth', async (t) => {
  // Port 0: no other test process can take the reporting port between choosing and listening.
  const reporting = await startTestReporting(t, api.databaseUrl, tempDataDir(t), { REPORTING_PORT: '0' });
  const web = await startWeb(loadConfig({ LOG_LEVEL: 'silent', SETTLE_RATE_LIMIT: 'off', DATABASE_URL: api.databaseUrl, PORT: '0', REPORTING_URL: reporting.running.url, REPORTING_SECRET: TEST_REPORTING_SECRET, REPORTING_WAIT: '10000' }), { keyCacheMs: 0 });
  t.teardown(() => web.stop());
  const res = await fetch(`${web.url}/transactions?fields=${FIELDS}&attrs[batch]=stats`, { headers: { Authorization: `Basic ${Buffer.from(`${api.key}:`).toString('base64')}` } });
  const body = (await res.json()) as { values: Array<Record<string, unknown>>; reporting_position?: string };
  t.equal(res.status, 200, JSON.stringify(body));
  t.ok(body.reporting_position, 'answered by the reporting process');
  near(t, body.values[0], 'clickhouse');
  // Unfiltered, the statistics come from the rollup's partial sums (the tenant holds these payments only).
  const rolled = await fetch(`${web.url}/transactions?fields=${FIELDS}`, { headers: { Authorization: `Basic ${Buffer.from(`${api.key}:`).toString('base64')}` } });
  t.match(rolled.headers.get('server-timing'), /desc="rollup( months)?"/, 'read from the rollup (its month rows, or its days when one waits for its recompute)');
  near(t, ((await rolled.json()) as { values: Array<Record<string, unknown>> }).values[0], 'clickhouse rollup');
  const grouped = await fetch(`${web.url}/transactions?fields=trigger,payment_link_id,count&group_by=trigger,payment_link_id&attrs[batch]=stats`, { headers: { Authorization: `Basic ${Buffer.from(`${api.key}:`).toString('base64')}` } });
  t.same(((await grouped.json()) as { values: unknown }).values, [{ trigger: 'manual', payment_link_id: null, count: 5 }], 'grouped by trigger and payment link');
});
