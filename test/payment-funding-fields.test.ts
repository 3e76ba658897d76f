/**
 * A card payment's statement sets its funding fields itself (api/families/transactions/repository.ts,
 * migration 20261207002200): the same fields the funding trigger gives any other writer's row, from
 * the processing account's delay and the tenant's test clock, and the ledger legs that follow them.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t, { REPORTING_URL: 'off' });
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35' } };
const DAY = 86_400_000;
const key = await api.newKey('funding-fields', 'test');
const post = (path: string, json: Record<string, unknown>) => api.request('POST', path, { key, json });
const account = await post('/processing_accounts', { name: 'Shop', funding_delay: 3 });
if (account.status !== 200) throw new Error(JSON.stringify(account.body));
// A Friday ten days on, so the delay crosses a weekend.
const friday = new Date(Date.now() + 10 * DAY);
friday.setUTCDate(friday.getUTCDate() + ((5 - friday.getUTCDay() + 7) % 7));
const clock = await api.request('PUT', '/test_clock', { key, json: { now: `${friday.toISOString().slice(0, 10)} 12:00:00` } });
if (clock.status !== 200) throw new Error(JSON.stringify(clock.body));

const funding = async (id: string) => (await api.db.raw(
  `select data->'fee' as fee, data->'conv_fee' as conv_fee, data->>'funding_status' as funding_status, data->>'funding_date' as funding_date,
          (select count(*)::int from ledger_entries where transaction_id = t.id) as legs
     from transactions t where id = ?`, [id])).rows[0];

async function pay(amount: number): Promise<string> {
  const paid = await post('/transactions', { type: 'payment', amount, processing_id: account.body.id, payment_method: CARD });
  if (paid.status !== 200 || paid.body.status !== 'processed') throw new Error(JSON.stringify(paid.body));
  return paid.body.id;
}

t.test('a card payment has the funding fields the trigger gives the same row written by SQL', async (t) => {
  const id = await pay(123.45);
  await api.db.raw(`insert into transactions (id, org_id, environment, type, data)
    select id || '_sql', org_id, environment, type, data - 'fee' - 'funding_status' - 'funding_date' from transactions where id = ?`, [id]);
  const statement = await funding(id);
  t.match(statement, { fee: 388, conv_fee: 0, funding_status: 'pending', legs: 3 });
  t.same(statement, await funding(`${id}_sql`));
});

t.test('a card payment is funded by its own statement, not by the trigger', async (t) => {
  await api.db.raw('alter table transactions disable trigger transactions_funding_fields');
  t.teardown(() => api.db.raw('alter table transactions enable trigger transactions_funding_fields'));
  const id = await pay(10);
  t.match(await funding(id), { fee: 59, funding_status: 'pending', funding_date: /^\d{4}-\d{2}-\d{2}$/, legs: 3 });
});
