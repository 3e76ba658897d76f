/**
 * `DELETE /test_data` reaches the reporting mirror: the transactions it deletes leave the
 * ClickHouse copy through the change feed, so the aggregates the reporting process answers for
 * the environment are empty right after the reset, while another org's are unchanged. (Its own
 * file: libchdb binds one data directory per process.)
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';
import { reportingFirst } from './reporting-support.ts';

const { databaseUrl, webEnv } = await reportingFirst(t, { REPORTING_WAIT: '5000' });
const api = await startTestApi(t, webEnv, {}, databaseUrl);
const globex = await api.newKey('globex', 'test');

const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };

async function payments(key: string, amounts: number[]): Promise<void> {
  const customer = (await api.request('POST', '/customers', { key, json: { name: 'Payer' } })).body;
  for (const amount of amounts) {
    const res = await api.request('POST', '/transactions', { key, json: { type: 'payment', amount, customer_id: customer.id, payment_method: CARD } });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  }
}

/** The reporting process's answer (an aggregate is always answered there). */
async function totals(key: string): Promise<unknown> {
  const res = await api.request('GET', '/transactions?fields=count(id),sum(amount)', { key });
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body.values;
}

t.test('the reset empties the environment in the reporting mirror, and only there', async (t) => {
  await payments(api.key, [10, 20, 30]);
  await payments(globex, [5, 7]);
  t.same(await totals(api.key), [{ 'count(id)': 3, 'sum(amount)': 60 }], 'acme test, mirrored');
  const globexBefore = await totals(globex);
  t.same(globexBefore, [{ 'count(id)': 2, 'sum(amount)': 12 }]);

  const reset = await api.request('DELETE', '/test_data');
  t.equal(reset.status, 200);
  t.equal(reset.body.deleted.transactions, 3);
  t.same(await totals(api.key), [{ 'count(id)': 0, 'sum(amount)': null }], 'read right after the reset: nothing left in the mirror');
  t.same(await totals(globex), globexBefore, "the other org's mirrored transactions stay");

  await payments(api.key, [4]);
  t.same(await totals(api.key), [{ 'count(id)': 1, 'sum(amount)': 4 }], 'a payment after the reset is mirrored as usual');
});
