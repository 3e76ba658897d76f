/**
 * A client token's intent is a scope, not a set of defaults: the browser cannot change the
 * customer, the processing account, the status or a fixed amount, can pay only with the method it
 * enters in that request, cannot split the money, and cannot replay a secret key's responses.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };
const shop = (await api.request('POST', '/processing_accounts', { json: { name: 'Shop' } })).body;
const elsewhere = (await api.request('POST', '/processing_accounts', { json: { name: 'Elsewhere' } })).body;
const c1 = (await api.request('POST', '/customers', { json: { name: 'C1' } })).body;
const c2 = (await api.request('POST', '/customers', { json: { name: 'C2', email: 'c2@example.com' } })).body;
const c2Card = (await api.request('POST', '/payment_methods', { json: { ...CARD, customer_id: c2.id } })).body;

async function token(intent: Record<string, unknown>): Promise<string> {
  const res = await api.request('POST', '/access_tokens', { json: { type: 'client', intent } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

async function paymentsOf(customerId: string): Promise<number> {
  return Number((await api.db('transactions').whereRaw(`data->>'customer_id' = ?`, [customerId]).count('* as n'))[0].n);
}

t.test('the preset customer cannot be swapped, and another customer\'s saved card is never charged', async (t) => {
  const form = await token({ payment_form: { payment: { amount: 10, customer_id: c1.id } } });
  const swapped = await api.request('POST', '/transactions', { key: form, json: { type: 'payment', customer_id: c2.id, payment_method: CARD } });
  t.equal(swapped.status, 400, JSON.stringify(swapped.body));
  t.same(swapped.body.details, { customer_id: 'Fixed by the client token' });
  const bare = await api.request('POST', '/transactions', { key: form, json: { type: 'payment', customer_id: c1.id } });
  t.equal(bare.status, 403, 'even its own customer\'s saved card is not charged from the browser');
  const v2 = await api.request('POST', '/transactions', { key: form, version: 'v2', json: { type: 'payment', sender: { account_id: c2.id, method: CARD } } });
  t.equal(v2.status, 400);
  t.same(v2.body.details, { sender: { account_id: 'Fixed by the client token' } });
  t.equal(await paymentsOf(c2.id), 0, 'C2 was never charged');
  const paid = await api.request('POST', '/transactions', { key: form, json: { type: 'payment', payment_method: CARD } });
  t.equal(paid.status, 200, 'the token still works for its own customer');
  t.equal(paid.body.customer_id, c1.id);
});

t.test('a token pays only with the method entered in the request, never a stored one', async (t) => {
  const form = await token({ payment_form: { payment: { amount: 10 } } });
  for (const json of [
    { type: 'payment', payment_method_id: c2Card.id },
    { type: 'payment', payment_method: { id: c2Card.id } },
    { type: 'payment', customer_id: c2.id },
  ]) {
    const res = await api.request('POST', '/transactions', { key: form, json });
    t.equal(res.status, 403, `${JSON.stringify(json)}: a stored method or another payer is forbidden to this token`);
  }
  const v2 = await api.request('POST', '/transactions', { key: form, version: 'v2', json: { type: 'payment', sender: { account_id: c2.id } } });
  t.equal(v2.status, 403, 'v2 sender.account_id');
  const v2Method = await api.request('POST', '/transactions', { key: form, version: 'v2', json: { type: 'payment', sender: { method_id: c2Card.id } } });
  t.equal(v2Method.status, 403, 'v2 sender.method_id');
  t.equal(await paymentsOf(c2.id), 0);
});

t.test('the preset processing account cannot be swapped and transfers cannot split the money', async (t) => {
  const form = await token({ payment_form: { payment: { amount: 10, processing_id: shop.id } } });
  const v1 = await api.request('POST', '/transactions', { key: form, json: { type: 'payment', processing_id: elsewhere.id, payment_method: CARD } });
  t.equal(v1.status, 400);
  const v2 = await api.request('POST', '/transactions', { key: form, version: 'v2', json: { type: 'payment', receiver: { account_id: elsewhere.id }, sender: { method: CARD } } });
  t.equal(v2.status, 400);
  const split = await api.request('POST', '/transactions', {
    key: form, version: 'v2', json: { type: 'payment', sender: { method: CARD }, transfers: [{ receiver: { account_id: elsewhere.id }, amount: 9 }] },
  });
  t.equal(split.status, 403);
  const noPreset = await token({ payment_form: { payment: { amount: 10 } } });
  const named = await api.request('POST', '/transactions', { key: noPreset, json: { type: 'payment', processing_id: elsewhere.id, payment_method: CARD } });
  t.equal(named.status, 400, 'without a preset the environment default is used, not one the browser names');
  const ok = await api.request('POST', '/transactions', { key: form, json: { type: 'payment', payment_method: CARD } });
  t.equal(ok.body.processing_id, shop.id);
  t.equal(Number((await api.db('transactions').whereRaw(`data->>'processing_id' = ?`, [elsewhere.id]).count('* as n'))[0].n), 0);
});

t.test('the status and a fixed amount come from the token', async (t) => {
  const form = await token({ payment_form: { payment: { amount: 100 } } });
  const cheap = await api.request('POST', '/transactions', { key: form, json: { type: 'payment', amount: 0.01, payment_method: CARD } });
  t.equal(cheap.status, 400);
  t.same(cheap.body.details, { amount: 'Fixed by the client token' });
  const authorized = await api.request('POST', '/transactions', { key: form, json: { type: 'payment', status: 'authorized', payment_method: CARD } });
  t.equal(authorized.status, 400, 'an authorization the intent did not ask for');
  const editable = await token({ checkout_plugin: { amount: 100, description: 'tip jar', amount_editable: true } });
  const chosen = await api.request('POST', '/transactions', { key: editable, json: { type: 'payment', amount: 3.5, payment_method: CARD } });
  t.equal(chosen.status, 200);
  t.equal(chosen.body.amount, 3.5, 'amount_editable lets the payer choose');
});

t.test('intent amounts follow the API\'s money rule at token creation', async (t) => {
  for (const amount of ['abc', -5, 0, 0.004, '1e3']) {
    const res = await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { payment_form: { payment: { amount } } } } });
    t.equal(res.status, 400, `payment_form amount ${amount}`);
    t.match(res.body.details, { intent: { payment_form: { payment: { amount: String } } } });
    const plugin = await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { checkout_plugin: { amount, description: 'x' } } } });
    t.equal(plugin.status, 400, `checkout_plugin amount ${amount}`);
    const page = await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { checkout_page: { payment: { amount, description: 'x' } } } } });
    t.equal(page.status, 400, `checkout_page amount ${amount}`);
  }
});

t.test('an intent amount with more decimals is rounded to the cent like any amount', async (t) => {
  const form = await token({ payment_form: { payment: { amount: 10.005 } } });
  const paid = await api.request('POST', '/transactions', { key: form, json: { type: 'payment', payment_method: CARD } });
  t.equal(paid.status, 200);
  t.equal(paid.body.amount, 10.01);
});

t.test('a payment_method_form token cannot attach its method to another account', async (t) => {
  const form = await token({ payment_method_form: { payment_method: { customer_id: c1.id } } });
  const other = await api.request('POST', '/payment_methods', { key: form, json: { ...CARD, customer_id: c2.id } });
  t.equal(other.status, 400);
  const own = await api.request('POST', '/payment_methods', { key: form, json: CARD });
  t.equal(own.status, 200, JSON.stringify(own.body));
  t.equal(own.body.customer_id, c1.id);
  const bare = await token({ payment_method_form: {} });
  const attached = await api.request('POST', '/payment_methods', { key: bare, json: { ...CARD, customer_id: c2.id } });
  t.equal(attached.status, 400, 'no preset account: the browser names none');
});

t.test('a client token never replays a secret key\'s idempotent response', async (t) => {
  const headers = { 'Idempotency-Key': 'shared-key-1' };
  const secretPaid = await api.request('POST', '/transactions', { headers, json: { type: 'payment', amount: 10, payment_method: CARD } });
  t.equal(secretPaid.status, 200);
  const form = await token({ payment_form: { payment: { amount: 10 } } });
  const browser = await api.request('POST', '/transactions', { key: form, headers, json: { type: 'payment', amount: 10, payment_method: CARD } });
  t.equal(browser.headers.get('Idempotent-Replayed'), null, 'not a replay');
  t.equal(browser.status, 200);
  t.not(browser.body.id, secretPaid.body.id, 'its own payment');
  const again = await api.request('POST', '/transactions', { headers, json: { type: 'payment', amount: 10, payment_method: CARD } });
  t.equal(again.body.id, secretPaid.body.id, 'the secret key still replays its own');
});

t.test('a stored idempotent response is sealed: a webhook secret is not in the database in clear', async (t) => {
  const res = await api.request('POST', '/webhooks', { headers: { 'Idempotency-Key': 'hook-1' }, json: { trigger: 'payment', url: 'https://example.com/hook' } });
  t.equal(res.status, 200);
  t.match(res.body.sender_secret, /^whsec_/);
  const stored = await api.db('idempotency_keys').whereLike('key', '%:hook-1').first();
  t.notMatch(JSON.stringify(stored.response_body), res.body.sender_secret);
  const replay = await api.request('POST', '/webhooks', { headers: { 'Idempotency-Key': 'hook-1' }, json: { trigger: 'payment', url: 'https://example.com/hook' } });
  t.equal(replay.body.sender_secret, res.body.sender_secret, 'the replay still answers it');
});

t.test('a client token acts once in every encoding: a list create is 403 and writes nothing', async (t) => {
  const bare = (await api.request('POST', '/access_tokens', { json: { type: 'client' } })).body.id;
  const before = Number((await api.db('transactions').count('* as n'))[0].n);
  const payment = (amount: number) => ({ type: 'payment', amount, payment_method: CARD });
  const listed = await api.request('POST', '/transactions', { key: bare, json: { object: 'list', values: [payment(1), payment(2)] } });
  t.equal(listed.status, 403, JSON.stringify(listed.body));
  t.equal(listed.body.error_type, 'Forbidden');
  const form = await api.request('POST', '/transactions', { key: bare, form: 'object=list&values[0][type]=payment&values[0][amount]=1&values[0][payment_method][type]=card&values[0][payment_method][card][card_number]=4242424242424242&values[0][payment_method][card][expiry]=12/35' });
  t.equal(form.status, 403, 'the form encoding too');
  const methods = await api.request('POST', '/payment_methods', { key: bare, json: { object: 'list', values: [CARD, CARD] } });
  t.equal(methods.status, 403, 'and for payment methods');
  t.equal(Number((await api.db('transactions').count('* as n'))[0].n), before, 'nothing was written');
  const once = await api.request('POST', '/transactions', { key: bare, json: payment(3) });
  t.equal(once.status, 200, 'the token still has its one use');
});

t.test('a token made without an intent may name any processing account or customer of its own org', async (t) => {
  const v1 = await api.request('POST', '/transactions', {
    key: (await api.request('POST', '/access_tokens', { json: { type: 'client' } })).body.id,
    json: { type: 'payment', amount: 4, processing_id: elsewhere.id, customer_id: c1.id, payment_method: CARD },
  });
  t.equal(v1.status, 200, JSON.stringify(v1.body));
  t.equal(v1.body.processing_id, elsewhere.id);
  t.equal(v1.body.customer_id, c1.id);
  const bare = (await api.request('POST', '/access_tokens', { json: { type: 'client' } })).body.id;
  const v2 = await api.request('POST', '/transactions', {
    key: bare, version: 'v2',
    json: { type: 'payment', amount: 5, sender: { account_id: c2.id, method: CARD }, receiver: { account_id: shop.id } },
  });
  t.equal(v2.status, 200, JSON.stringify(v2.body));
  t.equal(v2.body.receiver.account_id, shop.id);
  const other = await api.newKey('globex', 'test');
  const theirs = (await api.request('POST', '/processing_accounts', { key: other, json: { name: 'Theirs' } })).body;
  const foreign = await api.request('POST', '/transactions', {
    key: (await api.request('POST', '/access_tokens', { json: { type: 'client' } })).body.id,
    json: { type: 'payment', amount: 6, processing_id: theirs.id, payment_method: CARD },
  });
  t.equal(foreign.status, 400, 'another org\'s account is not found');
  t.match(foreign.body.details, { processing_id: String });
});

t.test('an intent with conv_fee has the payer pay the fee on top: conv_fee is the price, the account keeps the whole amount', async (t) => {
  const account = (await api.request('POST', '/processing_accounts', { json: { name: 'Convenience' } })).body;
  const form = await token({ payment_form: { payment: { amount: 100, processing_id: account.id }, conv_fee: true } });
  const paid = await api.request('POST', '/transactions?fields=*,fee,conv_fee', { key: form, json: { type: 'payment', payment_method: CARD } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  const got = (await api.request('GET', `/transactions/${paid.body.id}?fields=*,fee,conv_fee`)).body;
  t.equal(got.conv_fee, 3.2, 'card pricing of 100.00 (2.9 % + 0.30), charged to the payer');
  t.equal(got.fee, 0, 'nothing is taken from the processing account');
  const v2 = (await api.request('GET', `/transactions/${paid.body.id}?fields=*,fee,conv_fee`, { version: 'v2' })).body;
  t.equal(v2.conv_fee, 3.2, 'v2 shows it too');
  const balance = (await api.request('GET', `/processing_accounts/${account.id}?fields=*,balance`)).body.balance;
  t.equal(balance.pending, 100, 'the whole amount is pending for the account');

  const plain = await token({ payment_form: { payment: { amount: 100, processing_id: account.id } } });
  const other = await api.request('POST', '/transactions?fields=*,fee,conv_fee', { key: plain, json: { type: 'payment', payment_method: CARD } });
  const stored = (await api.request('GET', `/transactions/${other.body.id}?fields=*,fee,conv_fee`)).body;
  t.same([stored.conv_fee, stored.fee], [0, 3.2], 'without conv_fee the account pays the fee and the payer nothing extra');
});
