import t from 'tap';
import { startTestApi, startTestWorker, type TestApi } from './helpers/api.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t, { SETTLE_AUTH_WINDOW: '600', SETTLE_PROCESSING_DELAY: '50' });
await startTestWorker(t, api.databaseUrl, { SETTLE_AUTH_WINDOW: '600', WORKER_POLL_INTERVAL: '100' });

const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };
const BANK = { type: 'bank_account', bank_account: { account_number: '123456789', routing_number: '036001808', account_type: 'checking' } };

// The default processing account a new org's test environment starts with (CONTRACT §3).
const processing = (await api.request('GET', '/processing_accounts?order_by=created_at&limit=1')).body.values[0];
const customer = (await api.request('POST', '/customers', { json: { name: 'Payer', email: 'payer@example.com' } })).body;

async function pay(a: TestApi, amount: number, extra: Record<string, unknown> = {}, key?: string) {
  return a.request('POST', '/transactions', { key, json: { type: 'payment', amount, customer_id: customer.id, payment_method: CARD, ...extra } });
}

/** The transaction's lifecycle events (its operations' events are tested in transaction-operations.test.ts). */
function lifecycleEvents(objectId: string) {
  return api.db('events').where({ object_id: objectId }).whereNot({ trigger: 'transaction:operation' });
}

t.test('v1 one-step card payment is processed and shows the card only masked', async (t) => {
  const res = await pay(api, 10.5);
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.equal(res.body.status, 'processed');
  t.equal(res.body.amount, 10.5);
  t.equal(res.body.processing_id, processing.id, 'no processing_id: the default processing account');
  t.equal(res.body.payment_method.card.card_number, 'xxxxxxxxxxxx4242');
  t.equal(res.body.card_brand, 'visa');
  const stored = await api.db('payment_methods').where({ id: res.body.payment_method_id }).first();
  t.notMatch(JSON.stringify(stored.data), /4242424242424242/, 'the full number is never stored in clear');
  t.notMatch(JSON.stringify(stored.data), /"123"/, 'the card code is never stored');
  t.equal((await api.db('transactions').where({ id: res.body.id }).first()).data.amount, 1050, 'stored in minor units');
  const ledger = await api.request('GET', `/transactions/${res.body.id}?fields=*,ledger`);
  t.same(ledger.body.ledger, [], 'an untouched payment has an empty ledger');
  t.equal((await api.request('GET', `/transactions/${res.body.id}`)).body.ledger, undefined, 'ledger is a non-default field');
});

t.test('the same transaction reads in both versions', async (t) => {
  const res = await pay(api, 7);
  const v2 = await api.request('GET', `/transactions/${res.body.id}`, { version: 'v2' });
  t.same(v2.body.status, { value: 'processed', code: 'approved', message: 'Approved' });
  t.equal(v2.body.sender.account_id, customer.id);
  t.equal(v2.body.sender.method_id, res.body.payment_method_id);
  t.equal(v2.body.receiver.account_id, processing.id);
  const byStatus = await api.request('GET', `/transactions?status[value]=processed&id=${res.body.id}`, { version: 'v2' });
  t.equal(byStatus.body.values.length, 1, 'v2 filters on status[value]');
  const byV1Status = await api.request('GET', `/transactions?status=processed&id=${res.body.id}`);
  t.equal(byV1Status.body.values.length, 1, 'v1 filters on status');
});

t.test('sandbox declines are stored, evented and answered as TransactionDeclined', async (t) => {
  for (const [nn, code] of [['00', 'card_expired'], ['03', 'general_decline'], ['09', 'too_many_attempts']]) {
    const res = await pay(api, 5, { payment_method: { type: 'card', card: { card_number: `41111111111199${nn}`, expiry: '12/35' } } });
    t.equal(res.status, 400);
    t.equal(res.body.error_type, 'TransactionDeclined');
    t.equal(res.body.details.status, 'declined');
    t.equal(res.body.details.status_code, code);
    const stored = await api.db('transactions').where({ id: res.body.details.id }).first();
    t.equal(stored.data.status, 'declined', 'the declined transaction is stored');
    const events = await lifecycleEvents(res.body.details.id);
    t.same(events.map((e: any) => e.trigger), ['decline']);
  }
});

t.test('v2 create of a card or bank payment answers processed at once, also to a processing account created a moment before', async (t) => {
  const fresh = (await api.request('POST', '/accounts', { version: 'v2', json: { type: 'processing', name: 'Opened just now' } })).body;
  const bank = { type: 'bank_account', bank_account: { account_number: '123456789', routing_number: '036001808', account_type: 'checking' } };
  for (const [method, receiver] of [[CARD, processing.id], [CARD, fresh.id], [bank, fresh.id]] as const) {
    const res = await api.request('POST', '/transactions', {
      version: 'v2',
      json: { type: 'payment', amount: 20, sender: { account_id: customer.id, method }, receiver: { account_id: receiver } },
    });
    t.equal(res.status, 200, JSON.stringify(res.body));
    t.equal(res.body.status.value, 'processed', `${method.type} to ${receiver === fresh.id ? 'a new' : 'an older'} processing account`);
    t.equal((await api.request('GET', `/transactions/${res.body.id}`, { version: 'v2' })).body.status.value, 'processed', 'and stays so');
    const triggers = (await lifecycleEvents(res.body.id).orderBy('seq')).map((e: any) => e.trigger);
    t.same(triggers, ['payment', 'processed'], 'the payment and its processing, as in v1');
  }
});

t.test('authorize, capture, void and illegal transitions', async (t) => {
  const manual = await api.request('POST', '/transactions', {
    version: 'v2', json: { type: 'payment', amount: 30, status: { value: 'authorized' }, sender: { account_id: customer.id, method: CARD } },
  });
  t.equal(manual.body.status.value, 'authorized');
  const captured = await api.request('PUT', `/transactions/${manual.body.id}`, { version: 'v2', json: { status: { value: 'processed' } } });
  t.equal(captured.body.status.value, 'processed');
  const recapture = await api.request('PUT', `/transactions/${manual.body.id}`, { json: { status: 'authorized' } });
  t.equal(recapture.status, 400);
  t.match(recapture.body.details.status, /Cannot change status from processed to authorized/);
  const voided = await api.request('PUT', `/transactions/${manual.body.id}`, { json: { status: 'voided' } });
  t.equal(voided.body.status, 'voided');
  const revive = await api.request('PUT', `/transactions/${manual.body.id}`, { json: { status: 'processed' } });
  t.equal(revive.status, 400, 'a voided payment stays voided');
  const amount = await api.request('PUT', `/transactions/${manual.body.id}`, { json: { amount: 1 } });
  t.equal(amount.status, 400, 'the amount cannot change after creation');
  const triggers = (await lifecycleEvents(manual.body.id).orderBy('seq')).map((e: any) => e.trigger);
  t.same(triggers, ['payment', 'authorized', 'processed', 'void']);

  const twoStepKey = await api.newKey('acme', 'test', { authorize_and_capture: true });
  const twoStep = await pay(api, 4, {}, twoStepKey);
  t.equal(twoStep.body.status, 'authorized', 'a v1 authorize_and_capture key authorizes');
  t.equal((await api.request('DELETE', `/transactions/${twoStep.body.id}`)).status, 400, 'transactions cannot be deleted');
});

t.test('refunds: linked partial, over-refund refused, blind, v2 transfers link', async (t) => {
  const payment = (await pay(api, 100)).body;
  const partial = await api.request('POST', '/transactions', { json: { type: 'refund', amount: 30, ledger: [{ assoc_transaction_id: payment.id }] } });
  t.equal(partial.status, 200, JSON.stringify(partial.body));
  t.equal(partial.body.status_code, 'approved');
  t.equal(partial.body.customer_id, customer.id, 'the refund goes back to the payer');
  const v2 = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'refund', transfers: [{ assoc_transaction_id: payment.id, amount: 50 }] } });
  t.equal(v2.status, 200, JSON.stringify(v2.body));
  t.equal(v2.body.amount, 50);
  const over = await api.request('POST', '/transactions', { json: { type: 'refund', amount: 20.01, ledger: [{ assoc_transaction_id: payment.id }] } });
  t.equal(over.status, 400);
  t.match(over.body.details.amount, /20\.00 remains/);
  const ledger = await api.request('GET', `/transactions/${payment.id}?fields=*,ledger`);
  t.same(ledger.body.ledger.map((l: any) => [l.entry_type, l.amount]), [['refund', -30], ['refund', -50]]);
  const blind = await api.request('POST', '/transactions', { json: { type: 'refund', amount: 12, processing_id: processing.id, customer_id: customer.id, payment_method: CARD } });
  t.equal(blind.status, 200, JSON.stringify(blind.body));
  t.equal(blind.body.status, 'processed');
  const refunds = await api.request('GET', `/transactions?type=refund&amount=>=12`);
  t.ok(refunds.body.values.some((r: any) => r.id === blind.body.id), 'the filter finds the 12.00 refund');
  t.same([...new Set(refunds.body.values.map((r: any) => r.type))], ['refund']);
  t.same(refunds.body.values.filter((r: any) => r.amount < 12), [], 'no refund under 12.00');
});

t.test('20 concurrent refunds never exceed the payment', async (t) => {
  const payment = (await pay(api, 100)).body;
  const attempts = await Promise.all(Array.from({ length: 20 }, () =>
    api.request('POST', '/transactions', { json: { type: 'refund', amount: 15, ledger: [{ assoc_transaction_id: payment.id }] } })));
  const accepted = attempts.filter((r) => r.status === 200);
  const refused = attempts.filter((r) => r.status === 400);
  t.equal(accepted.length + refused.length, 20, 'every attempt is either accepted or refused with 400');
  t.equal(accepted.length, 6, '6 × 15 fits in 100, a 7th does not');
  const total = await api.db.raw(`select sum((data->>'amount')::bigint)::int as total from transactions where type = 'refund' and data->>'status' = 'processed' and id = any(?)`, [accepted.map((r) => r.body.id)]);
  t.ok(total.rows[0].total <= 10000, 'stored refunds sum to at most the payment');
});

t.test('bank payments: ABA checked, and 000 accounts are rejected by the bank after processing', async (t) => {
  const badRouting = await pay(api, 5, { payment_method: { ...BANK, bank_account: { ...BANK.bank_account, routing_number: '123456789' } } });
  t.equal(badRouting.status, 400);
  t.same(badRouting.body.details, { bank_account: { routing_number: 'Invalid routing number' } });
  const ok = await pay(api, 5, { payment_method: BANK });
  t.equal(ok.body.status, 'processed');
  t.equal(ok.body.payment_method.bank_account.account_number, 'xxxxx6789');
  const doomed = await pay(api, 5, { payment_method: { ...BANK, bank_account: { ...BANK.bank_account, account_number: '000123456' } } });
  t.equal(doomed.body.status, 'processed');
  const later = await eventually(() => api.request('GET', `/transactions/${doomed.body.id}`), (r) => r.body.status === 'rejected');
  t.equal(later.body.status, 'rejected');
  const triggers = (await lifecycleEvents(doomed.body.id).orderBy('seq')).map((e: any) => e.trigger);
  t.same(triggers, ['payment', 'processed', 'reject', 'bank_account_reject']);
});

t.test('v2 transfers split a payment across processing accounts', async (t) => {
  const vendor = (await api.request('POST', '/processing_accounts', { json: { name: 'Vendor' } })).body;
  const res = await api.request('POST', '/transactions', {
    version: 'v2',
    json: { type: 'payment', amount: 100, sender: { account_id: customer.id, method: CARD }, receiver: { account_id: processing.id }, transfers: [{ amount: 25, receiver: { account_id: vendor.id } }] },
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.same(res.body.transfers.map((x: any) => [x.object, x.account_id, x.amount]), [['transfer', vendor.id, 25]]);
  const tooMuch = await api.request('POST', '/transactions', {
    version: 'v2', json: { type: 'payment', amount: 10, sender: { account_id: customer.id, method: CARD }, transfers: [{ amount: 25, receiver: { account_id: vendor.id } }] },
  });
  t.equal(tooMuch.status, 400);
  const events = await api.db('events').where({ trigger: 'transfer' });
  t.ok(events.some((e: any) => e.value.transaction_id === res.body.id), 'a transfer event per transfer');
});

t.test('payouts, deposits and withdrawals in both spellings', async (t) => {
  const bankMethod = (await api.request('POST', '/payment_methods', { json: { ...BANK, customer_id: customer.id } })).body;
  const credit = await api.request('POST', '/transactions', { json: { type: 'credit', amount: 9, customer_id: customer.id, processing_id: processing.id, payment_method_id: bankMethod.id } });
  t.equal(credit.status, 200, JSON.stringify(credit.body));
  t.equal(credit.body.type, 'credit');
  const asV2 = await api.request('GET', `/transactions/${credit.body.id}`, { version: 'v2' });
  t.equal(asV2.body.type, 'payout');
  t.equal(asV2.body.sender.account_id, processing.id);
  t.equal(asV2.body.receiver.account_id, customer.id);
  const v1Payout = await api.request('POST', '/transactions', { json: { type: 'payout', amount: 1, processing_id: processing.id, payment_method_id: bankMethod.id } });
  t.equal(v1Payout.status, 400, 'v1 names payouts credit');
  // A withdrawal pulls money in from the account's funding method; a deposit may then release
  // what is available (CONTRACT §14). Another's bank account is refused.
  const shop = (await api.request('POST', '/processing_accounts', { json: { name: 'Funded shop', payment_methods: [BANK] } })).body;
  const foreign = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'withdraw', amount: 2, sender: { account_id: shop.id }, receiver: { method_id: bankMethod.id } } });
  t.equal(foreign.status, 400, 'a customer\'s bank account is not the shop\'s funding method');
  const withdraw = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'withdraw', amount: 2, sender: { account_id: shop.id } } });
  t.equal(withdraw.status, 200, JSON.stringify(withdraw.body));
  const deposit = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'deposit', amount: 2, receiver: { account_id: shop.id } } });
  t.equal(deposit.status, 200, JSON.stringify(deposit.body));
  const asV1 = await api.request('GET', `/transactions/${withdraw.body.id}`);
  t.equal(asV1.body.type, 'reversal');
  const credits = await api.request('GET', '/transactions?type=credit');
  t.ok(credits.body.values.length >= 1, 'the v2 payout shows up under its v1 name');
  t.same([...new Set(credits.body.values.map((x: any) => x.type))], ['credit']);
});

t.test('client tokens: intents validated, scoped, single-use, automatic authorizations expire', async (t) => {
  const missing = await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { checkout_plugin: { amount: 10 } } } });
  t.equal(missing.status, 400);
  t.same(missing.body.details, { intent: { checkout_plugin: { description: 'Required' } } });
  const page = await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { checkout_page: {} } } });
  t.equal(page.status, 400, 'checkout_page needs payment');
  const minted = await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { payment_form: { payment: { amount: 12, status: 'authorized', customer_id: customer.id } } } } });
  t.equal(minted.status, 200, JSON.stringify(minted.body));
  t.match(minted.body, { object: 'access_token', type: 'client', environ: 'test', status: 'active' });
  t.match(minted.body.id, /^test_client_key_/);
  const token = minted.body.id;
  t.equal((await api.request('GET', '/customers', { key: token })).status, 403, 'a client token cannot list customers');
  t.equal((await api.request('POST', '/access_tokens', { key: token, json: { type: 'client', intent: { payment_form: {} } } })).status, 403);
  const wrongAmount = await api.request('POST', '/transactions', { key: token, json: { type: 'payment', amount: 99, payment_method: CARD } });
  t.equal(wrongAmount.status, 400, 'the amount is fixed by the intent');
  // A manual authorization made before the automatic one: once that one has expired, this is past the same window.
  const manual = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'payment', amount: 5, status: { value: 'authorized' }, sender: { account_id: customer.id, method: CARD } } });
  const auth = await api.request('POST', '/transactions', { key: token, json: { type: 'payment', payment_method: CARD } });
  t.equal(auth.status, 200, JSON.stringify(auth.body));
  t.equal(auth.body.status, 'authorized');
  t.equal(auth.body.amount, 12);
  const again = await api.request('POST', '/transactions', { key: token, json: { type: 'payment', payment_method: CARD } });
  t.equal(again.status, 403, 'one payment per token');
  const expired = await eventually(() => api.request('GET', `/transactions/${auth.body.id}`), (r) => r.body.status === 'voided', 6000);
  t.equal(expired.body.status, 'voided');
  t.equal(expired.body.status_code, 'authorization_expired');

  t.equal((await api.request('GET', `/transactions/${manual.body.id}`)).body.status, 'authorized', 'manual authorizations never expire');
});

/** Backends of this database waiting for a lock another holds. */
async function lockWaiters(): Promise<number> {
  const found = await api.db.raw('select count(*)::int as n from pg_stat_activity where datname = current_database() and cardinality(pg_blocking_pids(pid)) > 0');
  return found.rows[0].n;
}

t.test('a capture racing the expiry either wins or loses, never both', async (t) => {
  const outcomes: string[] = [];
  for (const expiryFirst of [false, true, false, true]) {
    const minted = await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { checkout_plugin: { amount: 3, description: 'race', status: 'authorized' } } } });
    const auth = await api.request('POST', '/transactions', { key: minted.body.id, json: { type: 'payment', payment_method: CARD } });
    // Holding the row makes both contenders queue on it, so each round is a real race: they
    // start together when it is let go, in the order they queued.
    const hold = await api.db.transaction();
    await hold.raw('select id from transactions where id = ? for update', [auth.body.id]);
    let capture: Promise<{ status: number }> | undefined;
    if (!expiryFirst) capture = api.request('PUT', `/transactions/${auth.body.id}`, { json: { status: 'processed' } });
    t.equal(await eventually(lockWaiters, (n) => n >= 1, 5000), 1, 'the first contender waits for the row');
    capture ??= api.request('PUT', `/transactions/${auth.body.id}`, { json: { status: 'processed' } });
    t.equal(await eventually(lockWaiters, (n) => n >= 2, 5000), 2, 'the capture and the expiry both wait for the row');
    await hold.rollback();
    const answered = await capture;
    const final = await eventually(() => api.request('GET', `/transactions/${auth.body.id}`), (r) => r.body.status !== 'authorized', 4000);
    if (answered.status === 200) t.equal(final.body.status, 'processed', 'a capture that answered 200 stays processed');
    else t.equal(final.body.status, 'voided', 'a refused capture means the expiry won');
    if (expiryFirst) t.equal(final.body.status, 'voided', 'the expiry that took the row first voids the authorization');
    const triggers = (await lifecycleEvents(auth.body.id).orderBy('seq')).map((e: any) => e.trigger);
    t.notOk(triggers.includes('processed') && triggers.includes('void'), 'never both captured and voided');
    outcomes.push(final.body.status);
  }
  t.same(outcomes.filter((o) => o !== 'processed' && o !== 'voided'), [], 'every race ended captured or voided, none left authorized');
});
