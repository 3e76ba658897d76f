import t from 'tap';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);
const customer = (await api.request('POST', '/customers', { json: { name: 'Holder' } })).body;

t.test('cards are Luhn-checked, expiry-checked, and shown masked with their brand', async (t) => {
  const bad = await api.request('POST', '/payment_methods', { json: { type: 'card', card: { card_number: '4242424242424241', expiry: '12/35' } } });
  t.equal(bad.status, 400);
  t.same(bad.body.details, { card: { card_number: 'Invalid card number' } });
  const past = await api.request('POST', '/payment_methods', { json: { type: 'card', card: { card_number: '4242424242424242', expiry: '01/20' } } });
  t.same(past.body.details, { card: { expiry: 'Card has expired' } });
  const malformed = await api.request('POST', '/payment_methods', { json: { type: 'card', card: { card_number: '4242424242424242', expiry: '13/30' } } });
  t.same(malformed.body.details, { card: { expiry: 'Must be MM/YY' } });
  const ok = await api.request('POST', '/payment_methods', { json: { type: 'card', customer_id: customer.id, card: { card_number: '5103-2088-7967-2792', expiry: '7/2031', card_code: '999' } } });
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  t.same(ok.body.card, { card_number: 'xxxxxxxxxxxx2792', expiry: '07/31', card_brand: 'mastercard' });
  t.equal(ok.body.customer_id, customer.id);
  const v2 = await api.request('GET', `/payment_methods/${ok.body.id}`, { version: 'v2' });
  t.equal(v2.body.account_id, customer.id, 'v1 customer_id is v2 account_id');
  const change = await api.request('PUT', `/payment_methods/${ok.body.id}`, { json: { card: { card_number: '4242424242424242' } } });
  t.equal(change.status, 400, 'a stored number cannot be replaced');
  const sameNumber = await api.request('POST', '/payment_methods', { json: { type: 'card', card: { card_number: '5103208879672792', expiry: '07/31' } } });
  const rows = await api.db('payment_methods').whereIn('id', [ok.body.id, sameNumber.body.id]);
  t.equal(rows[0].data.card.fingerprint, rows[1].data.card.fingerprint, 'equal numbers share a fingerprint');
  t.not(rows[0].data.card.sealed_number, rows[1].data.card.sealed_number, 'each seal uses a fresh IV');
});

t.test('one paying default per account: v2 account_defaults and v1 default_payment_method are one rule', async (t) => {
  const a = (await api.request('POST', '/payment_methods', { version: 'v2', json: { type: 'card', account_id: customer.id, card: { card_number: '4242424242424242', expiry: '12/35' }, account_defaults: { paying: 'all' } } })).body;
  t.equal(a.account_defaults.paying, 'all');
  let v1 = await api.request('GET', `/customers/${customer.id}`);
  t.equal(v1.body.default_payment_method, a.id, 'v1 reads the v2 rule');
  const b = (await api.request('POST', '/payment_methods', { json: { type: 'bank_account', customer_id: customer.id, bank_account: { account_number: '987654321', routing_number: '036001808' } } })).body;
  const set = await api.request('PUT', `/customers/${customer.id}`, { json: { default_payment_method: b.id } });
  t.equal(set.status, 200, JSON.stringify(set.body));
  t.equal(set.body.default_payment_method, b.id);
  const aAfter = await api.request('GET', `/payment_methods/${a.id}`, { version: 'v2' });
  t.equal(aAfter.body.account_defaults.paying, null, 'the previous default was unmarked');
  const bAfter = await api.request('GET', `/payment_methods/${b.id}`, { version: 'v2' });
  t.equal(bAfter.body.account_defaults.paying, 'all');
  const foreign = (await api.request('POST', '/payment_methods', { json: { type: 'card', card: { card_number: '4242424242424242', expiry: '12/35' } } })).body;
  const refused = await api.request('PUT', `/customers/${customer.id}`, { json: { default_payment_method: foreign.id } });
  t.equal(refused.status, 400, 'only the customer\'s own methods');
  v1 = await api.request('GET', `/customers/${customer.id}`);
  t.equal(v1.body.default_payment_method, b.id);
  const processing = (await api.request('POST', '/processing_accounts', { json: { name: 'P' } })).body;
  const charge = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 5, customer_id: customer.id, processing_id: processing.id } });
  t.equal(charge.status, 200, JSON.stringify(charge.body));
  t.equal(charge.body.payment_method_id, b.id, 'a payment without a method uses the default');
});

t.test('a payment_method_form client token creates exactly one method and nothing else', async (t) => {
  const token = (await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { payment_method_form: { payment_method: { transfer_type: 'two-way' } } } } })).body.id;
  const made = await api.request('POST', '/payment_methods', { key: token, json: { type: 'card', card: { card_number: '4242424242424242', expiry: '12/35' } } });
  t.equal(made.status, 200, JSON.stringify(made.body));
  const second = await api.request('POST', '/payment_methods', { key: token, json: { type: 'card', card: { card_number: '4242424242424242', expiry: '12/35' } } });
  t.equal(second.status, 403);
  t.equal((await api.request('POST', '/transactions', { key: token, json: { type: 'payment', amount: 1 } })).status, 403);
  const badIntent = await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { payment_method_form: { payment_method: { transfer_type: 'sideways' } } } } });
  t.equal(badIntent.status, 400);
});
