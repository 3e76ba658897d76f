/** Funding (CONTRACT §14): fees, funding runs by style on the test clock, balances, releases, voids, disputes, operations. */
import t from 'tap';
import { startTestApi, startTestWorker, type ApiResponse } from './helpers/api.ts';
import { loadConfig } from '../api/config.ts';
import { createDomainServices } from '../api/domain.ts';
import { fundAccount } from '../api/families/funding/run.ts';
import { rows } from '../api/db/connection.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t);
const domain = createDomainServices(loadConfig({ DATABASE_URL: api.databaseUrl }));
await startTestWorker(t, api.databaseUrl);

const DAY = 86_400_000;
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };
const BANK = { type: 'bank_account', bank_account: { account_number: '123456789', routing_number: '036001808', account_type: 'checking' } };
const clockText = (at: Date) => at.toISOString().slice(0, 19).replace('T', ' ');

interface Merchant {
  key: string;
  accountId: string;
  customerId: string;
  get: (path: string, version?: 'v1' | 'v2') => Promise<ApiResponse>;
  post: (path: string, json: Record<string, unknown>, version?: 'v1' | 'v2') => Promise<ApiResponse>;
  put: (path: string, json: Record<string, unknown>) => Promise<ApiResponse>;
}

let merchants = 0;
/** A processing account in its own org, with `methods` as its funding methods (a bank account by default). */
async function merchant(settings: Record<string, unknown> = {}, methods: unknown[] = [BANK]): Promise<Merchant> {
  const key = await api.newKey(`funding-${++merchants}`, 'test');
  const get = (path: string, version: 'v1' | 'v2' = 'v1') => api.request('GET', path, { key, version });
  const post = (path: string, json: Record<string, unknown>, version: 'v1' | 'v2' = 'v1') => api.request('POST', path, { key, json, version });
  const put = (path: string, json: Record<string, unknown>) => api.request('PUT', path, { key, json });
  const account = await post('/processing_accounts', {
    name: 'Shop', ...settings, payment_methods: methods,
  });
  if (account.status !== 200) throw new Error(JSON.stringify(account.body));
  const customer = await post('/customers', { name: 'Payer', email: 'payer@example.com' });
  return { key, accountId: account.body.id, customerId: customer.body.id, get, post, put };
}

async function pay(m: Merchant, amount: number, method: Record<string, unknown> = CARD, extra: Record<string, unknown> = {}): Promise<any> {
  const res = await m.post('/transactions', { type: 'payment', amount, customer_id: m.customerId, processing_id: m.accountId, payment_method: method, ...extra });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body;
}

async function balance(m: Merchant): Promise<Record<string, number>> {
  return (await m.get(`/processing_accounts/${m.accountId}?fields=*,balance`)).body.balance;
}

/** Moves the merchant's test clock `days` ahead of real time (always far enough for a 2-business-day delay at 5). */
async function advance(m: Merchant, days: number): Promise<void> {
  const moved = await m.put('/test_clock', { now: clockText(new Date(Date.now() + days * DAY)) });
  if (moved.status !== 200) throw new Error(JSON.stringify(moved.body));
}

async function transactionsOf(m: Merchant, type: string): Promise<any[]> {
  return (await m.get(`/transactions?type=${type}&fields=*,ledger&limit=100`)).body.values;
}

t.test('fees follow the sandbox pricing, half-up to the cent', async (t) => {
  const m = await merchant();
  t.equal((await pay(m, 100)).fee, 3.2, 'card: 2.9 % + 0.30');
  t.equal((await pay(m, 5)).fee, 0.45, 'card 5.00: 0.145 rounds half-up to 0.15');
  t.equal((await pay(m, 10, BANK)).fee, 0.1, 'bank: 1 %');
  t.equal((await pay(m, 1000, BANK)).fee, 5, 'bank: capped at 5.00');
  const refund = await m.post('/transactions', { type: 'refund', amount: 10, ledger: [{ assoc_transaction_id: (await pay(m, 10)).id }] });
  t.equal(refund.body.fee, 0, 'refunds carry no fee');
});

t.test('a processed payment is pending with a funding date in business days, and counts in the pending balance', async (t) => {
  const m = await merchant({ funding_delay: 3 });
  const payment = await pay(m, 100);
  t.equal(payment.funding_status, 'pending');
  const expected = new Date();
  for (let left = 3; left > 0;) {
    expected.setUTCDate(expected.getUTCDate() + 1);
    if (expected.getUTCDay() !== 0 && expected.getUTCDay() !== 6) left -= 1;
  }
  t.equal(payment.funding_date, expected.toISOString().slice(0, 10));
  t.same(await balance(m), { pending: 96.8, available: 0, held: 0, funded: 0, withdrawn: 0 });
});

t.test('netted: one deposit of payments less refunds and fees, listing what it funds', async (t) => {
  const m = await merchant();
  const a = await pay(m, 100);
  const b = await pay(m, 50);
  const refund = (await m.post('/transactions', { type: 'refund', amount: 20, ledger: [{ assoc_transaction_id: a.id }] })).body;
  await advance(m, 6);
  const deposits = await transactionsOf(m, 'deposit');
  t.equal(deposits.length, 1);
  t.equal(deposits[0].amount, 125.05);
  t.same(deposits[0].ledger.map((e: any) => e.assoc_transaction_id).sort(), [a.id, b.id, refund.id].sort());
  for (const id of [a.id, b.id, refund.id]) t.equal((await m.get(`/transactions/${id}`)).body.funding_status, 'funded', `${id} funded`);
  t.same(await balance(m), { pending: 0, available: 0, held: 0, funded: 125.05, withdrawn: 0 });
  await advance(m, 8);
  t.equal((await transactionsOf(m, 'deposit')).length, 1, 'a later run funds nothing twice');
});

t.test('netted: refunds above the day\'s payments make a withdrawal', async (t) => {
  const m = await merchant({ funding_delay: 0 });
  const a = await pay(m, 100);
  await advance(m, 2);
  await m.post('/transactions', { type: 'refund', amount: 60, ledger: [{ assoc_transaction_id: a.id }] });
  await advance(m, 4);
  const withdrawals = await transactionsOf(m, 'reversal');
  t.equal(withdrawals.length, 1);
  t.equal(withdrawals[0].amount, 60);
  t.same(await balance(m), { pending: 0, available: 0, held: 0, funded: 96.8, withdrawn: 60 });
});

t.test('itemized: one deposit per payment and one withdrawal per refund', async (t) => {
  const m = await merchant({ funding_style: 'itemized', funding_delay: 0 });
  const a = await pay(m, 100);
  const b = await pay(m, 10, BANK);
  await m.post('/transactions', { type: 'refund', amount: 5, ledger: [{ assoc_transaction_id: a.id }] });
  await advance(m, 2);
  t.same((await transactionsOf(m, 'deposit')).map((d) => d.amount).sort(), [9.9, 96.8]);
  t.same((await transactionsOf(m, 'reversal')).map((d) => d.amount), [5]);
  t.equal((await m.get(`/transactions/${b.id}`)).body.funding_status, 'funded');
});

t.test('gross: deposits before fees, and the month\'s fees withdrawn on the 1st', async (t) => {
  const m = await merchant({ funding_style: 'gross', funding_delay: 0 });
  await pay(m, 100);
  await pay(m, 200);
  // A day on, unless that is the 1st (the payments made on a month's last day): then that month's
  // last second, so the run funds them and the month's fees are still owed.
  const lastSecond = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1) - 1000);
  const moved = await m.put('/test_clock', { now: clockText(new Date(Math.max(Date.now(), Math.min(Date.now() + DAY, lastSecond.getTime())))) });
  t.equal(moved.status, 200, JSON.stringify(moved.body));
  t.same((await transactionsOf(m, 'deposit')).map((d) => d.amount), [300]);
  t.same(await balance(m), { pending: 0, available: -9.3, held: 0, funded: 300, withdrawn: 0 }, 'fees are owed until the 1st');
  const now = new Date();
  const firstOfNext = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1, 1));
  await m.put('/test_clock', { now: clockText(firstOfNext) });
  t.same((await transactionsOf(m, 'reversal')).map((d) => d.amount), [9.3]);
  t.same(await balance(m), { pending: 0, available: 0, held: 0, funded: 300, withdrawn: 9.3 });
});

t.test('manual: cleared money is held until a deposit releases it, never above the available balance', async (t) => {
  const m = await merchant({ funding_style: 'manual', funding_delay: 0 });
  const a = await pay(m, 100);
  const b = await pay(m, 50);
  await advance(m, 2);
  t.equal((await transactionsOf(m, 'deposit')).length, 0, 'no automatic deposit');
  t.equal((await m.get(`/transactions/${a.id}`)).body.funding_status, 'held');
  t.same(await balance(m), { pending: 0, available: 145.05, held: 0, funded: 0, withdrawn: 0 });
  const tooMuch = await m.post('/transactions', { type: 'deposit', processing_id: m.accountId, amount: 145.06 });
  t.equal(tooMuch.status, 400);
  t.match(tooMuch.body.details, { amount: /available balance \(145\.05\)/ });
  const first = await m.post('/transactions', { type: 'deposit', processing_id: m.accountId, amount: 96.8 });
  t.equal(first.status, 200, JSON.stringify(first.body));
  t.equal((await m.get(`/transactions/${a.id}`)).body.funding_status, 'funded', 'the oldest held payment it covers is funded');
  t.equal((await m.get(`/transactions/${b.id}`)).body.funding_status, 'held');
  const rest = await m.post('/transactions', { type: 'deposit', receiver: { account_id: m.accountId } }, 'v2');
  t.equal(rest.status, 200, JSON.stringify(rest.body));
  t.equal(rest.body.amount, 48.25, 'without an amount, all that is available');
  t.same(await balance(m), { pending: 0, available: 0, held: 0, funded: 145.05, withdrawn: 0 });
  t.equal((await m.post('/transactions', { type: 'deposit', processing_id: m.accountId })).status, 400, 'nothing left to release');
});

t.test('without a funding method cleared money is held, then deposited once a method exists', async (t) => {
  const m = await merchant({ funding_delay: 0 }, []);
  const a = await pay(m, 100);
  await advance(m, 2);
  t.equal((await m.get(`/transactions/${a.id}`)).body.funding_status, 'held');
  t.same(await balance(m), { pending: 0, available: 0, held: 96.8, funded: 0, withdrawn: 0 });
  const method = await m.post('/payment_methods', { ...BANK, account_id: m.accountId, account_defaults: { funding: 'deposits' } }, 'v2');
  t.equal(method.status, 200, JSON.stringify(method.body));
  await advance(m, 3);
  t.same((await transactionsOf(m, 'deposit')).map((d) => d.amount), [96.8]);
  t.equal((await m.get(`/transactions/${a.id}`)).body.funding_status, 'funded');
  t.same(await balance(m), { pending: 0, available: 0, held: 0, funded: 96.8, withdrawn: 0 });
});

t.test('a void before clearing cancels the payment and its fee', async (t) => {
  const m = await merchant({ funding_delay: 0 });
  const a = await pay(m, 100);
  const voided = await m.put(`/transactions/${a.id}`, { status: 'voided' });
  t.equal(voided.status, 200, JSON.stringify(voided.body));
  t.equal(voided.body.funding_status, null);
  t.same(await balance(m), { pending: 0, available: 0, held: 0, funded: 0, withdrawn: 0 });
});

t.test('a void after funding is refused, pointing to a refund', async (t) => {
  const m = await merchant({ funding_delay: 0 });
  const b = await pay(m, 100);
  await advance(m, 2);
  const late = await m.put(`/transactions/${b.id}`, { status: 'voided' });
  t.equal(late.status, 400);
  t.match(late.body.details, { status: /refund/ });
});

t.test('instant funding deposits the payment at once', async (t) => {
  const m = await merchant();
  const payment = (await m.post('/transactions', { type: 'payment', amount: 40, sender: { account_id: m.customerId, method: CARD }, receiver: { account_id: m.accountId }, funding_timing: 'instant' }, 'v2')).body;
  const funded = await eventually(() => m.get(`/transactions/${payment.id}`), (r) => r.body.funding_status === 'funded', 15_000);
  t.equal(funded.body.funding_status, 'funded');
  t.same((await transactionsOf(m, 'deposit')).map((d) => d.amount), [38.54]);
});

t.test('funding writes clear and fund operations, with their events', async (t) => {
  const m = await merchant({ funding_delay: 0 });
  const a = await pay(m, 100);
  await advance(m, 2);
  const ops = (await m.get(`/transaction_operations?transaction_id=${a.id}&limit=20`, 'v2')).body.values.map((o: any) => o.type);
  t.same(ops.sort(), ['clear', 'fund', 'process']);
  const events = (await rows<{ trigger: string }>(api.db, 'select trigger from events where object_id = ? order by seq', [a.id])).map((e) => e.trigger);
  t.ok(events.includes('transaction:operation:clear'), events.join(','));
  t.equal(events.filter((e) => e === 'transaction:operation').length, 3);
});

t.test('two funding runs of the same account at once fund each transaction once', async (t) => {
  const m = await merchant({ funding_delay: 0 });
  for (let i = 0; i < 5; i++) await pay(m, 10 + i);
  const [{ org_id: orgId }] = await rows<{ org_id: string }>(api.db, 'select org_id from accounts where id = ?', [m.accountId]);
  const tenant = { orgId, environment: 'test' as const };
  const later = new Date(Date.now() + 3 * DAY);
  const outcomes = await Promise.all([fundAccount(api.db, domain, tenant, m.accountId, later), fundAccount(api.db, domain, tenant, m.accountId, later)]);
  t.same(outcomes.map((o) => o.funded).sort(), [0, 5]);
  const deposits = await transactionsOf(m, 'deposit');
  t.equal(deposits.length, 1);
  t.equal(deposits[0].ledger.length, 5);
});

t.test('a disputed card is charged back, the chargeback comes off the next deposit, and cannot be made by hand', async (t) => {
  const m = await merchant({ funding_delay: 0 });
  const disputed = await pay(m, 100, { type: 'card', card: { card_number: '4000 0000 0000 0259', expiry: '12/35', card_code: '123' } });
  const chargebacks = await eventually(() => transactionsOf(m, 'chargeback'), (list) => list.length > 0, 15_000);
  t.equal(chargebacks.length, 1);
  t.equal(chargebacks[0].amount, 100);
  t.equal(chargebacks[0].ledger[0].assoc_transaction_id, disputed.id);
  const events = (await rows<{ trigger: string }>(api.db, 'select trigger from events where object_id = ?', [chargebacks[0].id])).map((e) => e.trigger);
  t.equal(events.filter((e) => e === 'chargeback').length, 1, events.join(','));
  t.equal((await m.post('/transactions', { type: 'refund', amount: 1, ledger: [{ assoc_transaction_id: disputed.id }] })).status, 400, 'a charged-back payment cannot be refunded');
  await pay(m, 200);
  await advance(m, 2);
  t.same((await transactionsOf(m, 'deposit')).map((d) => d.amount), [190.7]);
  t.equal((await m.post('/transactions', { type: 'chargeback', amount: 5, processing_id: m.accountId })).status, 400);
});

t.test('a reversed dispute returns the money with a chargeback_reversal', async (t) => {
  const m = await merchant({ funding_delay: 0 });
  await pay(m, 100, { type: 'card', card: { card_number: '4000 0000 0000 2685', expiry: '12/35', card_code: '123' } });
  const reversals = await eventually(() => transactionsOf(m, 'chargeback_reversal'), (list) => list.length > 0, 10_000);
  t.equal(reversals.length, 1);
  t.equal(reversals[0].amount, 100);
  t.same(await balance(m), { pending: 96.8, available: 0, held: 0, funded: 0, withdrawn: 0 });
});

t.test('a reverse-flow payment charges each sender its part, in one transaction, to one receiver', async (t) => {
  const m = await merchant();
  const senders = [];
  for (const number of ['4242 4242 4242 4242', '5555 5555 5555 4444']) {
    const customer = (await m.post('/customers', { name: 'Sender', email: 'sender@example.com' })).body.id;
    const method = (await m.post('/payment_methods', { type: 'card', card: { card_number: number, expiry: '12/35', card_code: '123' }, account_id: customer }, 'v2')).body.id;
    senders.push({ account_id: customer, method_id: method });
  }
  const res = await m.post('/transactions', { type: 'payment', receiver: { account_id: m.accountId }, transfers: [{ amount: 30, sender: senders[0] }, { amount: 20, sender: senders[1] }] }, 'v2');
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.equal(res.body.amount, 50);
  t.same(res.body.transfers.map((x: any) => [x.account_id, x.amount]).sort((x: any, y: any) => y[1] - x[1]), [[senders[0].account_id, 30], [senders[1].account_id, 20]]);
  await eventually(() => m.get(`/transactions/${res.body.id}`, 'v2'), (r) => r.body.status.value === 'processed', 15_000);
  t.same(await balance(m), { pending: 48.25, available: 0, held: 0, funded: 0, withdrawn: 0 });
});

t.test('a reverse-flow payment with one declined part charges no one', async (t) => {
  const m = await merchant();
  const customer = (await m.post('/customers', { name: 'Sender', email: 'sender@example.com' })).body.id;
  const good = (await m.post('/payment_methods', { ...CARD, account_id: customer }, 'v2')).body.id;
  const declined = (await m.post('/payment_methods', { type: 'card', card: { card_number: '4111 1111 1111 9903', expiry: '12/35', card_code: '123' }, account_id: customer }, 'v2')).body.id;
  const res = await m.post('/transactions', { type: 'payment', receiver: { account_id: m.accountId }, transfers: [{ amount: 30, sender: { account_id: customer, method_id: good } }, { amount: 20, sender: { account_id: customer, method_id: declined } }] }, 'v2');
  t.equal(res.status, 400);
  t.match(res.body.details, { transfers: { 1: { sender: { method_id: /Declined/ } } } }, JSON.stringify(res.body));
  t.equal((await transactionsOf(m, 'payment')).length, 0);
});

t.test('manual: partial releases, then the rest, leave nothing held', async (t) => {
  const m = await merchant({ funding_style: 'manual', funding_delay: 0 });
  const a = await pay(m, 100);
  const b = await pay(m, 30);
  await advance(m, 2);
  t.equal((await m.post('/transactions', { type: 'deposit', processing_id: m.accountId, amount: 50 })).status, 200);
  t.equal((await m.get(`/transactions/${a.id}`)).body.funding_status, 'funded', 'the oldest is paid first: what is left (75.63) no longer covers both');
  t.equal((await m.get(`/transactions/${b.id}`)).body.funding_status, 'held');
  t.equal((await m.post('/transactions', { type: 'deposit', processing_id: m.accountId })).status, 200);
  for (const id of [a.id, b.id]) t.equal((await m.get(`/transactions/${id}`)).body.funding_status, 'funded', `${id} funded`);
  t.same(await balance(m), { pending: 0, available: 0, held: 0, funded: 125.63, withdrawn: 0 });
});

t.test('itemized: a bank rejection after payout is withdrawn by the next run', async (t) => {
  const m = await merchant({ funding_style: 'itemized', funding_delay: 0 });
  const rejected = await pay(m, 100, { type: 'bank_account', bank_account: { account_number: '000111222', routing_number: '036001808', account_type: 'checking' } });
  await advance(m, 1);
  t.same((await transactionsOf(m, 'deposit')).map((d) => d.amount), [99], 'paid out before the bank answered');
  await eventually(() => m.get(`/transactions/${rejected.id}`), (r) => r.body.status === 'rejected', 15_000);
  await advance(m, 2);
  t.same((await transactionsOf(m, 'reversal')).map((d) => d.amount), [99]);
  t.same(await balance(m), { pending: 0, available: 0, held: 0, funded: 99, withdrawn: 99 });
});

t.test('a refunded or charged-back payment cannot be marked rejected by a client', async (t) => {
  const m = await merchant();
  const a = await pay(m, 100);
  await m.post('/transactions', { type: 'refund', amount: 60, ledger: [{ assoc_transaction_id: a.id }] });
  const rejected = await m.put(`/transactions/${a.id}`, { status: 'rejected' });
  t.equal(rejected.status, 400);
  t.match(rejected.body.details, { status: /refund/ });
  t.same(await balance(m), { pending: 36.8, available: 0, held: 0, funded: 0, withdrawn: 0 });
});

t.test('two deposits in one bulk request cannot release more than is available', async (t) => {
  const m = await merchant({ funding_style: 'manual', funding_delay: 0 });
  await pay(m, 100);
  await advance(m, 2);
  const bulk = await m.post('/transactions', { object: 'list', values: [{ type: 'deposit', processing_id: m.accountId }, { type: 'deposit', processing_id: m.accountId }] });
  t.equal(bulk.status, 400, 'the second finds nothing left');
  t.same(await balance(m), { pending: 0, available: 96.8, held: 0, funded: 0, withdrawn: 0 }, 'and nothing of the request was written');
});

t.test('a deposit goes only to a bank account of the processing account', async (t) => {
  const m = await merchant({ funding_style: 'manual', funding_delay: 0 });
  await pay(m, 100);
  await advance(m, 2);
  const toCard = await m.post('/transactions', { type: 'deposit', processing_id: m.accountId, payment_method: CARD });
  t.equal(toCard.status, 400);
  t.same(await balance(m), { pending: 0, available: 96.8, held: 0, funded: 0, withdrawn: 0 });
});

t.test('money held for want of a method is released by a manual deposit once the account has one', async (t) => {
  const m = await merchant({ funding_delay: 0 }, []);
  const a = await pay(m, 100);
  await advance(m, 2);
  t.same(await balance(m), { pending: 0, available: 0, held: 96.8, funded: 0, withdrawn: 0 });
  t.equal((await m.put(`/processing_accounts/${m.accountId}`, { funding_style: 'manual' })).status, 200);
  await m.post('/payment_methods', { ...BANK, account_id: m.accountId, account_defaults: { funding: 'deposits' } }, 'v2');
  const deposit = await m.post('/transactions', { type: 'deposit', processing_id: m.accountId });
  t.equal(deposit.status, 200, JSON.stringify(deposit.body));
  t.equal(deposit.body.amount, 96.8);
  t.equal((await m.get(`/transactions/${a.id}`)).body.funding_status, 'funded');
  t.same(await balance(m), { pending: 0, available: 0, held: 0, funded: 96.8, withdrawn: 0 });
});

t.test('a chargeback after a partial refund disputes only what was not refunded', async (t) => {
  const m = await merchant({ funding_delay: 0 });
  const disputed = await pay(m, 100, { type: 'card', card: { card_number: '4000 0000 0000 0259', expiry: '12/35', card_code: '123' } });
  t.equal((await m.post('/transactions', { type: 'refund', amount: 60, ledger: [{ assoc_transaction_id: disputed.id }] })).status, 200);
  const chargebacks = await eventually(() => transactionsOf(m, 'chargeback'), (list) => list.length > 0, 15_000);
  t.same(chargebacks.map((c) => c.amount), [40]);
  t.same(await balance(m), { pending: -3.2, available: 0, held: 0, funded: 0, withdrawn: 0 }, 'the account is out only its fee');
});

t.test('gross: a netted fee is not withdrawn again on the 1st', async (t) => {
  const m = await merchant({ funding_delay: 0 });
  await pay(m, 100);
  await advance(m, 1);
  t.same((await transactionsOf(m, 'deposit')).map((d) => d.amount), [96.8], 'netted while the account was netted');
  t.equal((await m.put(`/processing_accounts/${m.accountId}`, { funding_style: 'gross' })).status, 200);
  const now = new Date();
  await m.put('/test_clock', { now: clockText(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1, 1))) });
  t.same((await transactionsOf(m, 'reversal')).map((d) => d.amount), [], 'nothing owed');
  t.same(await balance(m), { pending: 0, available: 0, held: 0, funded: 96.8, withdrawn: 0 });
});

t.test('a payment processed after the test clock moved is dated by the clock', async (t) => {
  const m = await merchant({ funding_delay: 1 });
  const ahead = new Date(Date.now() + 30 * DAY);
  await m.put('/test_clock', { now: clockText(ahead) });
  const payment = await pay(m, 10);
  t.ok(payment.funding_date > ahead.toISOString().slice(0, 10), `${payment.funding_date} is after the clock's date`);
});

t.test('a request that locks a payment and then its account never deadlocks with a funding run', async (t) => {
  const m = await merchant({ funding_style: 'manual', funding_delay: 0 });
  const [{ org_id: orgId }] = await rows<{ org_id: string }>(api.db, 'select org_id from accounts where id = ?', [m.accountId]);
  const tenant = { orgId, environment: 'test' as const };
  const later = new Date(Date.now() + 3 * DAY);
  const outcomes: string[] = [];
  for (let round = 0; round < 25; round++) {
    const paid = await pay(m, 10);
    const [request, run] = await Promise.allSettled([
      m.post('/transactions', { object: 'list', values: [
        { type: 'refund', amount: 1, ledger: [{ assoc_transaction_id: paid.id }] },
        { type: 'deposit', processing_id: m.accountId, amount: 0.01 },
      ] }),
      fundAccount(api.db, domain, tenant, m.accountId, later),
    ]);
    outcomes.push(`${request.status === 'fulfilled' ? request.value.status : 'failed'}/${run.status === 'fulfilled' ? 'ok' : String((run.reason as { code?: string }).code)}`);
  }
  t.same(outcomes.filter((o) => o.startsWith('409') || !o.endsWith('/ok')), [], outcomes.join(' '));
});

t.test('a deposit the bank refuses gives the money back and holds what it paid out again', async (t) => {
  const refusing = { type: 'bank_account', bank_account: { account_number: '000111222', routing_number: '036001808', account_type: 'checking' } };
  const m = await merchant({ funding_style: 'manual', funding_delay: 0 }, [refusing]);
  const a = await pay(m, 100);
  await advance(m, 2);
  const deposit = await m.post('/transactions', { type: 'deposit', processing_id: m.accountId });
  t.equal(deposit.status, 200, JSON.stringify(deposit.body));
  t.equal((await m.get(`/transactions/${a.id}`)).body.funding_status, 'funded');
  await eventually(() => m.get(`/transactions/${deposit.body.id}`), (r) => r.body.status === 'rejected', 15_000);
  t.equal((await m.get(`/transactions/${deposit.body.id}`)).body.status, 'rejected');
  t.same(await balance(m), { pending: 0, available: 96.8, held: 0, funded: 0, withdrawn: 0 }, 'the money is available again');
  t.equal((await m.get(`/transactions/${a.id}`)).body.funding_status, 'held', 'and the payment waits for the next release');
});

t.test('a funding run\'s deposit and a requested deposit are shown alike: from the processing account to its funding method', async (t) => {
  const automatic = await merchant({ funding_delay: 0 });
  await pay(automatic, 20);
  await advance(automatic, 2);
  const [run] = (await automatic.get('/transactions?type=deposit', 'v2')).body.values;
  const manual = await merchant({ funding_style: 'manual', funding_delay: 0 });
  await pay(manual, 20);
  await advance(manual, 2);
  const requested = (await manual.post('/transactions', { type: 'deposit', receiver: { account_id: manual.accountId } }, 'v2')).body;
  const method = async (m: Merchant) => (await m.get(`/payment_methods?account_id=${m.accountId}`, 'v2')).body.values[0].id;
  t.match(run, { type: 'deposit', sender: { account_id: automatic.accountId, method_id: null }, receiver: { account_id: automatic.accountId, method_id: await method(automatic) }, trigger: 'automatic' });
  t.match(requested, { type: 'deposit', sender: { account_id: manual.accountId, method_id: null }, receiver: { account_id: manual.accountId, method_id: await method(manual) } });
  const netted = (await automatic.get(`/transactions?type=deposit&receiver[method_id]=${await method(automatic)}`, 'v2')).body.values;
  t.same(netted.map((d: { id: string }) => d.id), [run.id], 'a filter on the receiving method finds the run\'s deposit');
  const v1 = (await automatic.get(`/transactions/${run.id}`)).body;
  t.match(v1, { processing_id: automatic.accountId, payment_method_id: await method(automatic), customer_id: null });
  const events = (await rows<{ trigger: string }>(api.db, 'select trigger from events where object_id = ? order by id', [run.id])).map((e) => e.trigger);
  t.same(events.filter((e) => e !== 'transaction:operation'), ['deposit'], 'one creation event, its type\'s (beside its operation\'s)');
});

t.test('a chargeback books its payment\'s customer as receiver, and both ledgers show it; a client cannot mark a transaction as made by the service', async (t) => {
  const m = await merchant({ funding_delay: 0 });
  const disputed = await pay(m, 30, { type: 'card', card: { card_number: '4000 0000 0000 2685', expiry: '12/35', card_code: '123' } });
  const [reversal] = await eventually(() => transactionsOf(m, 'chargeback_reversal'), (list) => list.length > 0, 10_000);
  const [chargeback] = await transactionsOf(m, 'chargeback');
  const v2 = (await m.get(`/transactions/${chargeback.id}`, 'v2')).body;
  t.match(v2, { sender: { account_id: m.accountId }, receiver: { account_id: m.customerId, method_id: disputed.payment_method_id } });
  t.match((await m.get(`/transactions/${reversal.id}`, 'v2')).body, { sender: { account_id: m.customerId }, receiver: { account_id: m.accountId } }, 'the reversal brings the money back in');
  const original = (await m.get(`/transactions/${disputed.id}?fields=*,ledger`)).body.ledger;
  t.same(original.map((e: any) => [e.entry_type, e.amount, e.assoc_transaction_id]), [['chargeback', -30, chargeback.id]]);
  t.same(chargeback.ledger.map((e: any) => [e.entry_type, e.amount, e.assoc_transaction_id]).sort(), [['chargeback', 30, disputed.id], ['chargeback_reversal', 30, reversal.id]].sort());
  const posed = await m.post('/transactions', { type: 'payment', amount: 1, customer_id: m.customerId, processing_id: m.accountId, payment_method: CARD, made_by: 'card_network' });
  const stored = posed.status === 200 ? await api.db('transactions').where({ id: posed.body.id }).first() : null;
  t.ok(posed.status === 400 || stored?.data.made_by === undefined, `a client's made_by is refused or ignored (${posed.status})`);
});
