/**
 * Requests exactly as the public client libraries send them (CONTRACT §1, §13; research notes §0):
 * processing accounts with nested funding methods (v1) and processing settings (v2), client
 * tokens without an intent, amounts with many decimals.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);
const BANK = { object: 'payment_method', type: 'bank_account', bank_account: { account_number: '123456789', routing_number: '036001808', account_type: 'checking' } };
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35' } };

t.test('a v1 processing account with nested payment_methods gets them as its funding methods', async (t) => {
  const res = await api.request('POST', '/processing_accounts', {
    json: {
      name: 'Sole Prop',
      legal_entity: { legal_name: 'Sole Prop LLC', type: 'INDIVIDUAL_SOLE_PROPRIETORSHIP', country: 'US', owners: { full_name: 'Owner', ownership: '100' } },
      payment_methods: [BANK],
    },
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.equal(res.body.object, 'processing_account');
  t.equal(res.body.payment_methods, undefined, 'not stored on the account');
  const methods = await api.request('GET', `/payment_methods?customer_id=${res.body.id}`);
  t.equal(methods.body.values.length, 1);
  t.equal(methods.body.values[0].bank_account.account_number, 'xxxxx6789');
  const v2 = await api.request('GET', `/payment_methods/${methods.body.values[0].id}`, { version: 'v2' });
  t.equal(v2.body.account_defaults.funding, 'all', 'the funding method');
  t.equal(v2.body.account_id, res.body.id);
  const stored = await api.db('accounts').where({ id: res.body.id }).first();
  t.equal(stored.data.payment_methods, undefined);
});

t.test('a lone nested payment method counts as a one-item list', async (t) => {
  const res = await api.request('POST', '/processing_accounts', { json: { name: 'Lone', payment_methods: BANK } });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.equal((await api.request('GET', `/payment_methods?customer_id=${res.body.id}`)).body.values.length, 1);
});

t.test('a bad nested payment method fails the whole create', async (t) => {
  const before = Number((await api.db('accounts').count('* as n'))[0].n);
  const res = await api.request('POST', '/processing_accounts', { json: { name: 'Bad', payment_methods: [{ type: 'bank_account', bank_account: { account_number: '1', routing_number: '000000001' } }] } });
  t.equal(res.status, 400);
  t.ok(res.body.details.payment_methods, JSON.stringify(res.body.details));
  t.equal(Number((await api.db('accounts').count('* as n'))[0].n), before, 'no account left behind');
});

t.test('a v2 processing account takes processing.default_category', async (t) => {
  const res = await api.request('POST', '/accounts', {
    version: 'v2',
    json: { type: 'processing', name: 'Realty', entity: { type: 'business', legal_name: 'Realty LLC', country: 'US' }, processing: { default_category: 'real_estate' } },
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.equal(res.body.processing.default_category, 'real_estate');
});

t.test('a client token without an intent makes one payment or one method', async (t) => {
  const minted = await api.request('POST', '/access_tokens', { json: { type: 'client' } });
  t.equal(minted.status, 200, JSON.stringify(minted.body));
  t.same(minted.body.intent, {});
  const paid = await api.request('POST', '/transactions', { key: minted.body.id, json: { type: 'payment', amount: 5, payment_method: CARD } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  const again = await api.request('POST', '/payment_methods', { key: minted.body.id, json: CARD });
  t.equal(again.status, 403, 'one use');
  const other = await api.request('POST', '/access_tokens', { json: { type: 'client' } });
  const method = await api.request('POST', '/payment_methods', { key: other.body.id, json: CARD });
  t.equal(method.status, 200, JSON.stringify(method.body));
  t.equal((await api.request('GET', '/customers', { key: other.body.id })).status, 403);
});

t.test('amounts with more than two decimals are rounded half-up to the cent', async (t) => {
  for (const [sent, shown] of [[123.456, 123.46], [10.004, 10], ['7.125', 7.13], [0.005, 0.01]] as const) {
    const res = await api.request('POST', '/transactions', { json: { type: 'payment', amount: sent, payment_method: CARD } });
    t.equal(res.status, 200, `${sent}: ${JSON.stringify(res.body)}`);
    t.equal(res.body.amount, shown, `${sent} → ${shown}`);
  }
  const zero = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 0.004, payment_method: CARD } });
  t.equal(zero.status, 400, 'zero after rounding');
});

t.test('the collections the libraries list answer: the caller\'s org, its keys, and empty read-only ones', async (t) => {
  const orgs = await api.request('GET', '/accounts/orgs');
  t.equal(orgs.status, 200);
  t.match(orgs.body.values, [{ object: 'org', id: String, name: 'acme' }]);
  t.equal(orgs.body.values.length, 1, 'only the caller\'s org');
  const users = await api.request('GET', '/users');
  t.equal(users.status, 200);
  t.ok(users.body.values.length >= 1);
  t.notMatch(JSON.stringify(users.body), api.key, 'no secret key in the answer');
  for (const path of ['app_settings', 'processing_rules', 'processing_agreements', 'check_fronts', 'check_backs']) {
    const list = await api.request('GET', `/${path}`, { version: 'v2' });
    t.same([list.status, list.body], [200, { object: 'list', values: [] }], path);
    t.equal((await api.request('POST', `/${path}`, { json: {} })).status, 400, `${path} is read-only`);
    t.equal((await api.request('GET', `/${path}?q=(((`)).status, 400, `${path}: a bad query is still a 400`);
  }
  t.equal((await api.request('GET', '/accounts/orgs/org_other')).status, 404);
});

t.test('refund entries list as v1 transaction_ledgers and v2 transfers', async (t) => {
  const paid = (await api.request('POST', '/transactions', { json: { type: 'payment', amount: 20, payment_method: CARD } })).body;
  const refund = (await api.request('POST', '/transactions', { json: { type: 'refund', amount: 5, ledger: [{ assoc_transaction_id: paid.id }] } })).body;
  const v1 = await api.request('GET', `/transaction_ledgers?transaction_id=${paid.id}`);
  t.equal(v1.status, 200, JSON.stringify(v1.body));
  t.match(v1.body.values, [{ object: 'transaction_ledger', entry_type: 'refund', amount: -5, assoc_transaction_id: refund.id }]);
  const v2 = await api.request('GET', `/transfers?transaction_id=${refund.id}`, { version: 'v2' });
  t.match(v2.body.values, [{ object: 'transfer', type: 'refund', amount: 5, assoc_transaction_id: paid.id }]);
  t.equal((await api.request('GET', '/transfers', { key: await api.newKey('other-org', 'test'), version: 'v2' })).body.values.length, 0, 'another tenant sees none');
  t.equal((await api.request('POST', '/transfers', { version: 'v2', json: { amount: 1 } })).status, 400, 'read-only');
});

t.test('a v2 payout takes its receiver\'s method inline; a payment cannot', async (t) => {
  const payee = (await api.request('POST', '/accounts', { version: 'v2', json: { type: 'customer', name: 'Payee' } })).body;
  const payout = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'payout', amount: 12, receiver: { account_id: payee.id, method: BANK } } });
  t.equal(payout.status, 200, JSON.stringify(payout.body));
  t.equal(payout.body.receiver.account_id, payee.id);
  t.match(payout.body.receiver.method_id, /^pm_/);
  const methods = await api.request('GET', `/payment_methods?account_id=${payee.id}`, { version: 'v2' });
  t.equal(methods.body.values.length, 1, 'the method belongs to the payee');
  const wrongSide = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'payment', amount: 1, receiver: { method: BANK } } });
  t.equal(wrongSide.status, 400);
});

t.test('a new org\'s test environment starts with an active default processing account; live starts empty', async (t) => {
  const test = await api.newKey('fresh-org', 'test');
  const live = await api.newKey('fresh-org', 'live');
  const accounts = (await api.request('GET', '/processing_accounts', { key: test })).body.values;
  t.match(accounts, [{ object: 'processing_account', name: 'fresh-org', status: 'active' }]);
  t.equal(accounts.length, 1);
  const paid = await api.request('POST', '/transactions', { key: test, json: { type: 'payment', amount: 3, payment_method: CARD } });
  t.equal(paid.status, 200, 'a payment without processing_id goes to it');
  t.equal(paid.body.processing_id, accounts[0].id);
  t.equal((await api.request('GET', '/processing_accounts', { key: live })).body.values.length, 0);
  await api.newKey('fresh-org', 'test');
  t.equal((await api.request('GET', '/processing_accounts', { key: test })).body.values.length, 1, 'a second key makes no second account');
});

t.test('bank accounts take currency and account_class in both versions; bad values are 400 and store nothing', async (t) => {
  for (const version of ['v1', 'v2']) {
    for (const [currency, accountClass] of [['USD', 'personal'], ['CAD', 'business']]) {
      const res = await api.request('POST', '/payment_methods', { version, json: { ...BANK, bank_account: { ...BANK.bank_account, currency, account_class: accountClass } } });
      t.equal(res.status, 200, `${version} ${currency} ${accountClass}: ${JSON.stringify(res.body)}`);
      t.equal(res.body.bank_account.currency, currency);
      t.equal(res.body.bank_account.account_class, accountClass);
      t.equal((await api.request('GET', `/payment_methods/${res.body.id}`, { version })).body.bank_account.account_class, accountClass, 'stored');
    }
  }
  const plain = await api.request('POST', '/payment_methods', { json: BANK });
  t.equal(plain.body.bank_account.currency, 'USD', 'USD unless named');
  const before = Number((await api.db('payment_methods').count('* as n'))[0].n);
  const bad = await api.request('POST', '/payment_methods', { json: { ...BANK, bank_account: { ...BANK.bank_account, currency: 'EUR', account_class: 'corporate' } } });
  t.equal(bad.status, 400);
  t.match(bad.body.details, { bank_account: { currency: String, account_class: String } });
  t.equal(Number((await api.db('payment_methods').count('* as n'))[0].n), before);
});

t.test('POST /accounts without a type creates customers, one object or a list, in both versions', async (t) => {
  const one = await api.request('POST', '/accounts', { json: { name: 'Untyped' } });
  t.equal(one.status, 200, JSON.stringify(one.body));
  t.equal(one.body.type, 'customer');
  const v2 = await api.request('POST', '/accounts', { version: 'v2', json: { name: 'Untyped v2' } });
  t.equal(v2.body.type, 'customer');
  const many = await api.request('POST', '/accounts', { json: { object: 'list', values: [{ object: 'customer', name: 'L1' }, { name: 'L2' }] } });
  t.equal(many.status, 200, JSON.stringify(many.body));
  t.same(many.body.values.map((a: { type: string }) => a.type), ['customer', 'customer']);
  const processing = await api.request('POST', '/accounts', { json: { type: 'processing', name: 'Still a shop' } });
  t.equal(processing.body.type, 'processing', 'a named type is kept');
});

t.test('conv_fee is a non-default transaction field, 0 when none was charged', async (t) => {
  const paid = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 12, payment_method: { ...CARD, card: { ...CARD.card, card_code: '123' } } } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  t.notOk('conv_fee' in paid.body, 'not shown by default');
  for (const version of ['v1', 'v2']) {
    const shown = await api.request('GET', `/transactions/${paid.body.id}?fields=*,fee,conv_fee`, { version });
    t.equal(shown.status, 200, JSON.stringify(shown.body));
    t.equal(shown.body.conv_fee, 0, version);
    t.type(shown.body.fee, 'number');
  }
});

t.test('a v2 refund given only as transfers [{assoc_transaction_id, amount}] refunds that payment, whole or part', async (t) => {
  const customer = (await api.request('POST', '/accounts', { version: 'v2', json: { type: 'customer', name: 'Refunded' } })).body;
  const paid = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'payment', amount: 10, sender: { account_id: customer.id, method: { ...CARD, card: { ...CARD.card, card_code: '123' } } } } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  const part = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'refund', amount: 4, transfers: [{ assoc_transaction_id: paid.body.id, amount: 4 }] } });
  t.equal(part.status, 200, JSON.stringify(part.body));
  t.equal(part.body.amount, 4);
  t.equal(part.body.status.value, 'processed');
  const rest = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'refund', transfers: [{ assoc_transaction_id: paid.body.id }] } });
  t.equal(rest.status, 200, JSON.stringify(rest.body));
  t.equal(rest.body.amount, 6, 'without an amount: what remains');
  const over = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'refund', amount: 1, transfers: [{ assoc_transaction_id: paid.body.id, amount: 1 }] } });
  t.equal(over.status, 400, 'nothing remains to refund');
});
