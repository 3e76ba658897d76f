/**
 * Invoices, their items in three views, and paying them (CONTRACT §12): v1 and v2 requests as the
 * client libraries send them, biller inference, exact totals, allocations committed with the
 * payment, released by a void or a bank reject, and never over the balance under concurrency.
 */
import t from 'tap';
import { startTestApi, startTestWorker, type TestApi } from './helpers/api.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t, { SETTLE_PROCESSING_DELAY: '50' });
await startTestWorker(t, api.databaseUrl, { SETTLE_PROCESSING_DELAY: '50', WORKER_POLL_INTERVAL: '50' });

// The environment's default processing account: the one a new org's test environment starts with.
const defaultBiller = (await api.request('GET', '/processing_accounts?order_by=created_at&limit=1')).body.values[0].id;

const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35' } };
const DECLINED_CARD = { type: 'card', card: { card_number: '4111 1111 1111 9903', expiry: '12/35' } };

async function customer(a: TestApi = api, key?: string): Promise<string> {
  const res = await a.request('POST', '/customers', { key, json: { name: 'Payer', email: 'payer@example.com' } });
  return res.body.id;
}

async function invoice(custId: string, items: unknown = [{ entry_type: 'charge', amount: 4.99 }], extra: Record<string, unknown> = {}) {
  const res = await api.request('POST', '/invoices', { json: { type: 'bill', due_date: '2026-11-23', customer_id: custId, items, ...extra } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body;
}

async function card(custId: string, number = CARD): Promise<string> {
  const res = await api.request('POST', '/payment_methods', { json: { ...number, customer_id: custId } });
  return res.body.id;
}

t.test('a v1 invoice is unpaid with exact totals, its biller inferred and its items nested as line items', async (t) => {
  const cust = await customer();
  const res = await api.request('POST', '/invoices', {
    json: { type: 'bill', due_date: '2026-11-23T15:30:00Z', customer_id: cust, items: [{ entry_type: 'charge', amount: 0.1, qty: 3 }, { amount: 0.2, type: 'item1' }] },
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  const inv = res.body;
  t.match(inv, { object: 'invoice', type: 'bill', status: 'unpaid', due_date: '2026-11-23', customer_id: cust, total_due: 0.5, amount_due: 0.5, total_paid: 0 });
  t.equal(inv.processing_id, defaultBiller, 'the environment default processing account bills');
  t.equal(inv.items.length, 2);
  t.match(inv.items[0], { object: 'line_item', invoice_id: inv.id, entry_type: 'charge', amount: 0.1, qty: 3, total: 0.3 });
  t.match(inv.items[1], { object: 'line_item', type: 'item1', total: 0.2 });
  const stored = await api.db('invoices').where({ id: inv.id }).first();
  t.same(stored.data.totals, { total: 50, paid: 0, balance_due: 50 }, 'integer minor units');
});

t.test("the payer's primary processing account bills before the environment default", async (t) => {
  const own = await api.request('POST', '/processing_accounts', { json: { name: 'Own biller' } });
  const cust = await api.request('POST', '/customers', { json: { name: 'P', primary_processing_id: own.body.id } });
  const inv = await invoice(cust.body.id);
  t.equal(inv.processing_id, own.body.id);
});

t.test('with no biller to be found the invoice is refused', async (t) => {
  const liveKey = await api.newKey('nobiller', 'live');
  const cust = await api.request('POST', '/customers', { key: liveKey, json: { name: 'P' } });
  const res = await api.request('POST', '/invoices', { key: liveKey, json: { due_date: '2026-11-23', customer_id: cust.body.id, items: { amount: 1 } } });
  t.equal(res.status, 400);
  t.same(res.body.details, { processing_id: 'Cannot find applicable biller' });
});

t.test('a v1 invoice may create its customer inline, in the same transaction', async (t) => {
  const res = await api.request('POST', '/invoices', { json: { due_date: '2026-11-23', customer: { name: 'Inline Payer', email: 'inline@example.com' }, items: { amount: 2 } } });
  t.equal(res.status, 200, JSON.stringify(res.body));
  const payer = await api.request('GET', `/customers/${res.body.customer_id}`);
  t.match(payer.body, { object: 'customer', name: 'Inline Payer', email: 'inline@example.com' });
  const before = Number((await api.db('accounts').count('* as n'))[0].n);
  const bad = await api.request('POST', '/invoices', { json: { due_date: 'never', customer: { name: 'Nobody' } } });
  t.equal(bad.status, 400);
  const badCustomer = await api.request('POST', '/invoices', { json: { due_date: '2026-11-23', customer: { email: 'not-an-email' } } });
  t.equal(badCustomer.status, 400);
  t.ok(badCustomer.body.details.customer, JSON.stringify(badCustomer.body));
  t.equal(Number((await api.db('accounts').count('* as n'))[0].n), before, 'no customer left behind');
  const link = await api.request('POST', '/payment_links', { json: { type: 'one_time', description: 'Inline', amount: 1, customer: { name: 'Link Payer' } } });
  t.equal(link.status, 200, JSON.stringify(link.body));
  t.ok(link.body.customer_id);
});

t.test('a v2 invoice shows payer, biller, totals and invoice_item children; a lone item is a one-item list', async (t) => {
  const cust = await customer();
  const res = await api.request('POST', '/invoices', {
    version: 'v2',
    json: { due_date: '2026-11-23', payer: { account_id: cust }, items: { object: 'invoice_item', type: 'line_item', line_item: { value: 4.99, qty: 2 } } },
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body, { object: 'invoice', status: 'unpaid', payer: { account_id: cust }, totals: { total: 9.98, subtotal: 9.98, paid: 0, balance_due: 9.98 } });
  t.ok(res.body.biller.account_id);
  t.match(res.body.items, [{ object: 'invoice_item', type: 'line_item', invoice_id: res.body.id, line_item: { value: 4.99, qty: 2 } }]);
  const v1 = await api.request('GET', `/invoices/${res.body.id}`);
  t.match(v1.body, { customer_id: cust, amount_due: 9.98, items: [{ object: 'line_item', entry_type: 'charge' }] }, 'the same row in v1');
});

t.test('items are collections of their own: /line_items (by entry_type), /invoice_items and /payment_allocations', async (t) => {
  const cust = await customer();
  const inv = await invoice(cust);
  const added = await api.request('POST', '/invoice_items', { version: 'v2', json: { invoice_id: inv.id, type: 'line_item', line_item: { value: 1 } } });
  t.equal(added.status, 200, JSON.stringify(added.body));
  t.equal((await api.request('GET', `/invoices/${inv.id}`)).body.amount_due, 5.99, 'the invoice follows its items');
  const charges = await api.request('GET', `/line_items?invoice_id=${inv.id}&entry_type=charge`);
  t.equal(charges.body.values.length, 2);
  const v2 = await api.request('GET', `/invoice_items?invoice_id=${inv.id}`, { version: 'v2' });
  t.equal(v2.body.values.length, 2);
  const external = await api.request('POST', '/payment_allocations', { version: 'v2', json: { invoice_id: inv.id, amount: 2, external_payment: true } });
  t.equal(external.status, 200, JSON.stringify(external.body));
  t.match(external.body, { object: 'payment_allocation', amount: 2, external_payment: true, invoice_id: inv.id });
  t.equal((await api.request('GET', `/invoices/${inv.id}`, { version: 'v2' })).body.status, 'partially_paid');
  t.equal((await api.request('GET', `/payment_allocations?invoice_id=${inv.id}`, { version: 'v2' })).body.values.length, 1);
  t.equal((await api.request('GET', `/invoice_items?invoice_id=${inv.id}`, { version: 'v2' })).body.values.length, 2, 'allocations are not invoice items');
  const removed = await api.request('DELETE', `/payment_allocations/${external.body.id}`, { version: 'v2' });
  t.equal(removed.status, 200);
  t.equal((await api.request('GET', `/invoices/${inv.id}`)).body.status, 'unpaid', 'removing the allocation steps the invoice back');
  const notExternal = await api.request('POST', '/payment_allocations', { version: 'v2', json: { invoice_id: inv.id, amount: 1 } });
  t.equal(notExternal.status, 400);
  const tooMuch = await api.request('POST', '/payment_allocations', { version: 'v2', json: { invoice_id: inv.id, amount: 100, external_payment: true } });
  t.equal(tooMuch.status, 400);
  t.ok(tooMuch.body.details.amount);
});

t.test('v1 line items are created directly with a free-text type; their entry_type decides the kind', async (t) => {
  const cust = await customer();
  const inv = await invoice(cust, []);
  const charge = await api.request('POST', '/line_items', { json: { invoice_id: inv.id, entry_type: 'charge', type: 'item1', amount: 3, qty: 2 } });
  t.equal(charge.status, 200, JSON.stringify(charge.body));
  t.match(charge.body, { object: 'line_item', entry_type: 'charge', type: 'item1', total: 6 });
  const external = await api.request('POST', '/line_items', { json: { invoice_id: inv.id, entry_type: 'payment', amount: 1, external_payment: true } });
  t.equal(external.status, 200, JSON.stringify(external.body));
  t.equal((await api.request('GET', `/payment_allocations/${external.body.id}`, { version: 'v2' })).body.object, 'payment_allocation', 'the same row in v2');
  t.match((await api.request('GET', `/invoices/${inv.id}`)).body, { status: 'partially_paid', total_due: 6, total_paid: 1, amount_due: 5 });
  const form = await api.request('POST', '/invoices', { form: `due_date=2026-11-23&customer_id=${cust}&items[0][type]=item1&items[0][amount]=29.99&items[0][entry_type]=charge` });
  t.equal(form.status, 200, JSON.stringify(form.body));
  t.equal(form.body.amount_due, 29.99, 'form bodies with bracketed keys');
});

t.test('a percentage charge is a share of the number charges, kept in step, rounded half-up', async (t) => {
  const cust = await customer();
  const inv = await invoice(cust, [{ amount: 10, qty: 2 }, { amount: 8.5, amount_type: 'percentage', type: 'tax' }]);
  t.equal(inv.total_due, 21.7, '20.00 + 8.5 % of it');
  t.match(inv.items[1], { amount_type: 'percentage', amount: 8.5, total: 1.7 });
  const added = await api.request('POST', '/invoice_items', { version: 'v2', json: { invoice_id: inv.id, type: 'line_item', line_item: { value: 1 } } });
  t.equal(added.status, 200, JSON.stringify(added.body));
  const after = await api.request('GET', `/invoices/${inv.id}`, { version: 'v2' });
  t.equal(after.body.totals.total, 22.79, '21.00 + 1.785 rounded half-up to 1.79');
  t.match(after.body.items[1].line_item, { value_units: 'percentage', value: 8.5 });
  const v2Tax = await api.request('POST', '/invoice_items', { version: 'v2', json: { invoice_id: inv.id, type: 'line_item', line_item: { value: 10, value_units: 'percentage' } } });
  t.equal(v2Tax.status, 200, JSON.stringify(v2Tax.body));
  t.equal((await api.request('GET', `/line_items/${v2Tax.body.id}`)).body.total, 2.1, '10 % of 21.00');
  t.equal((await api.request('GET', `/invoices/${inv.id}`)).body.total_due, 24.89);
});

t.test('a v1 payment with allocations pays the invoice in its own database transaction', async (t) => {
  const cust = await customer();
  const inv = await invoice(cust);
  const pm = await card(cust);
  const paid = await api.request('POST', '/transactions?fields=*,allocations', {
    json: { type: 'payment', amount: inv.amount_due, customer_id: cust, payment_method_id: pm, allocations: [{ object: 'line_item', entry_type: 'payment', invoice_id: inv.id }] },
  });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  t.equal(paid.body.processing_id, inv.processing_id, 'the receiver comes from the invoice');
  t.match(paid.body.allocations, [{ object: 'line_item', entry_type: 'payment', invoice_id: inv.id, amount: 4.99, transaction_id: paid.body.id }]);
  const after = await api.request('GET', `/invoices/${inv.id}`);
  t.match(after.body, { status: 'paid', amount_due: 0, total_paid: 4.99 });
  t.ok(after.body.paid_timestamp);
  t.equal(after.body.items.length, 2, 'v1 items list the charge and the payment');
  const again = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 1, customer_id: cust, payment_method_id: pm, allocations: [{ invoice_id: inv.id }] } });
  t.equal(again.status, 400, 'a paid invoice accepts no payment');
});

t.test('a v2 payment naming only the method and invoice_allocations pays the invoice at once', async (t) => {
  const cust = await customer();
  const inv = (await api.request('POST', '/invoices', { version: 'v2', json: { due_date: '2026-11-23', payer: { account_id: cust }, items: [{ type: 'line_item', line_item: { value: 4.99 } }] } })).body;
  const bank = await api.request('POST', '/payment_methods', { version: 'v2', json: { type: 'bank_account', account_id: cust, account_holder: 'H', bank_account: { account_number: '1234567890', routing_number: '036001808', account_type: 'checking' } } });
  t.equal(bank.status, 200, JSON.stringify(bank.body));
  const paid = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'payment', amount: inv.totals.balance_due, sender: { method_id: bank.body.id }, invoice_allocations: [{ invoice_id: inv.id }] } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  t.equal(paid.body.status.value, 'processed');
  t.equal(paid.body.sender.account_id, cust, 'the sender comes from the invoice');
  t.equal((await api.request('GET', `/invoices/${inv.id}`, { version: 'v2' })).body.status, 'paid');
  const shown = await api.request('GET', `/transactions/${paid.body.id}?fields=*,invoice_allocations`, { version: 'v2' });
  t.match(shown.body.invoice_allocations, [{ object: 'payment_allocation', invoice_id: inv.id, amount: 4.99 }]);
  t.notOk('invoice_allocations' in (await api.request('GET', `/transactions/${paid.body.id}`, { version: 'v2' })).body, 'a non-default field');
});

t.test('partial payments, then a void steps the invoice back', async (t) => {
  const cust = await customer();
  const inv = await invoice(cust, [{ amount: 10 }]);
  const pm = await card(cust);
  const first = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 4, customer_id: cust, payment_method_id: pm, allocations: [{ invoice_id: inv.id }] } });
  t.equal(first.status, 200, JSON.stringify(first.body));
  t.match((await api.request('GET', `/invoices/${inv.id}`)).body, { status: 'partially_paid', amount_due: 6 });
  const rest = await api.request('POST', '/transactions', { json: { type: 'payment', customer_id: cust, payment_method_id: pm, allocations: [{ invoice_id: inv.id }] } });
  t.equal(rest.status, 200, JSON.stringify(rest.body));
  t.equal(rest.body.amount, 6, 'no amount: the balance');
  t.equal((await api.request('GET', `/invoices/${inv.id}`)).body.status, 'paid');
  const voided = await api.request('PUT', `/transactions/${first.body.id}`, { json: { status: 'voided' } });
  t.equal(voided.status, 200, JSON.stringify(voided.body));
  t.match((await api.request('GET', `/invoices/${inv.id}`)).body, { status: 'partially_paid', amount_due: 4, total_paid: 6, paid_timestamp: null });
  t.equal((await api.request('GET', `/line_items?invoice_id=${inv.id}&entry_type=payment`)).body.values.length, 1, 'the voided allocation is gone');
});

t.test('a declined payment allocates nothing', async (t) => {
  const cust = await customer();
  const inv = await invoice(cust);
  const res = await api.request('POST', '/transactions', { json: { type: 'payment', customer_id: cust, payment_method: DECLINED_CARD, allocations: [{ invoice_id: inv.id }] } });
  t.equal(res.status, 400);
  t.equal(res.body.error_type, 'TransactionDeclined');
  t.match((await api.request('GET', `/invoices/${inv.id}`)).body, { status: 'unpaid', amount_due: 4.99 });
});

t.test('a bank reject after processing steps the invoice back', async (t) => {
  const cust = await customer();
  const inv = await invoice(cust);
  const res = await api.request('POST', '/transactions', {
    json: { type: 'payment', customer_id: cust, payment_method: { type: 'bank_account', bank_account: { account_number: '000123456', routing_number: '036001808' } }, allocations: [{ invoice_id: inv.id }] },
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.equal((await api.request('GET', `/invoices/${inv.id}`)).body.status, 'paid');
  t.ok(await eventually(async () => (await api.request('GET', `/transactions/${res.body.id}`)).body.status === 'rejected', Boolean, 10_000), 'the bank rejects');
  t.match((await api.request('GET', `/invoices/${inv.id}`)).body, { status: 'unpaid', amount_due: 4.99 });
});

t.test('payments racing for the last balance never over-allocate', async (t) => {
  const cust = await customer();
  const inv = await invoice(cust, [{ amount: 10 }]);
  const pm = await card(cust);
  const attempts = await Promise.all(Array.from({ length: 8 }, () =>
    api.request('POST', '/transactions', { json: { type: 'payment', amount: 3, customer_id: cust, payment_method_id: pm, allocations: [{ invoice_id: inv.id }] } })));
  const accepted = attempts.filter((r) => r.status === 200);
  t.equal(accepted.length + attempts.filter((r) => r.status === 400).length, 8, 'each attempt is accepted or refused with 400');
  t.equal(accepted.length, 3, '3 × 3 fits in 10, a 4th does not');
  const after = (await api.request('GET', `/invoices/${inv.id}`)).body;
  t.match(after, { status: 'partially_paid', total_paid: 9, amount_due: 1 });
  const bulk = await api.request('POST', '/transactions', {
    json: { object: 'list', values: [1, 2].map(() => ({ type: 'payment', amount: 1, customer_id: cust, payment_method_id: pm, allocations: [{ invoice_id: inv.id }] })) },
  });
  t.equal(bulk.status, 400, 'two items of one request cannot both take the last 1.00');
  t.equal((await api.request('GET', `/invoices/${inv.id}`)).body.total_paid, 9);
});

t.test('invoice statuses: draft takes no payment until opened, closed (v1 canceled) is final', async (t) => {
  const cust = await customer();
  const pm = await card(cust);
  const draft = await invoice(cust, [{ amount: 3 }], { status: 'draft' });
  t.equal(draft.status, 'draft');
  const refused = await api.request('POST', '/transactions', { json: { type: 'payment', customer_id: cust, payment_method_id: pm, allocations: [{ invoice_id: draft.id }] } });
  t.equal(refused.status, 400);
  const opened = await api.request('PUT', `/invoices/${draft.id}`, { json: { status: 'open' } });
  t.equal(opened.body.status, 'unpaid');
  const canceled = await api.request('PUT', `/invoices/${draft.id}`, { json: { status: 'canceled' } });
  t.equal(canceled.status, 200, JSON.stringify(canceled.body));
  t.equal(canceled.body.status, 'closed');
  t.equal((await api.request('PUT', `/invoices/${draft.id}`, { json: { status: 'unpaid' } })).status, 400);
  t.equal((await api.request('POST', '/line_items', { json: { invoice_id: draft.id, amount: 1 } })).status, 400, 'a closed invoice takes no items');
  const other = await invoice(cust);
  t.equal((await api.request('PUT', `/invoices/${other.id}`, { json: { status: 'paid' } })).status, 400, 'payments decide paid');
});

t.test("another org's invoice is 404 to read and cannot be paid", async (t) => {
  const inv = await invoice(await customer());
  const otherKey = await api.newKey('other-org', 'test');
  t.equal((await api.request('GET', `/invoices/${inv.id}`, { key: otherKey })).status, 404);
  const otherCust = await api.request('POST', '/customers', { key: otherKey, json: { name: 'X' } });
  const cross = await api.request('POST', '/transactions', { key: otherKey, json: { type: 'payment', customer_id: otherCust.body.id, payment_method: CARD, allocations: [{ invoice_id: inv.id }] } });
  t.equal(cross.status, 400, "another org's invoice cannot be paid");
});

t.test('deleting an invoice deletes its items', async (t) => {
  const inv = await invoice(await customer());
  const deleted = await api.request('DELETE', `/invoices/${inv.id}`);
  t.equal(deleted.status, 200);
  t.equal(deleted.body.object, 'invoice');
  t.equal((await api.request('GET', `/invoices/${inv.id}`)).status, 404);
  t.equal((await api.db('invoice_items').whereRaw("data->>'invoice_id' = ?", [inv.id])).length, 0);
});

t.test('malformed invoice and allocation input is a 400 in the error format, never a 500', async (t) => {
  const cust = await customer();
  const stranger = await customer();
  const inv = await invoice(cust);
  const cases: Array<[string, string, unknown, string?]> = [
    ['/transactions', 'POST', { type: 'payment', customer_id: stranger, payment_method: CARD, allocations: [{ invoice_id: inv.id }] }],
    ['/transactions', 'POST', { type: 'payment', sender: { account_id: stranger, method: CARD }, invoice_allocations: [{ invoice_id: inv.id }] }, 'v2'],
    ['/transactions', 'POST', { type: 'payment', receiver: { account_id: defaultBiller }, sender: { method: CARD }, invoice_allocations: { invoice_id: inv.id, amount: 0 } }, 'v2'],
    ['/invoices', 'POST', { customer_id: cust, due_date: 'soon' }],
    ['/invoices', 'POST', { customer_id: cust }],
    ['/invoices', 'POST', { due_date: '2026-11-23' }],
    ['/invoices', 'POST', { customer_id: 'acct_nope', due_date: '2026-11-23' }],
    ['/invoices', 'POST', { customer_id: cust, due_date: '2026-11-23', items: 'x' }],
    ['/invoices', 'POST', { customer_id: cust, due_date: '2026-11-23', items: [{ amount: -1 }] }],
    ['/invoices', 'POST', { customer_id: cust, due_date: '2026-11-23', items: [{ qty: 2 }] }],
    ['/invoices', 'POST', { customer_id: cust, due_date: '2026-11-23', items: [{ amount: 1, entry_type: 'payment' }] }],
    ['/invoices', 'POST', { customer_id: cust, due_date: '2026-11-23', status: 'paid' }],
    ['/invoices', 'POST', { customer_id: cust, due_date: '2026-11-23', processing_id: cust }],
    ['/invoices', 'POST', { due_date: '2026-11-23', payer: { account_id: cust }, items: [{ type: 'item_group' }] }, 'v2'],
    ['/invoices', 'POST', { due_date: '2026-11-23', payer: { account_id: cust, method_id: 'pm_not_theirs' } }, 'v2'],
    [`/invoices/${inv.id}`, 'PUT', { items: [{ amount: 1 }] }],
    ['/transactions', 'POST', { type: 'payment', customer_id: cust, payment_method: CARD, allocations: 'x' }],
    ['/transactions', 'POST', { type: 'payment', customer_id: cust, payment_method: CARD, allocations: [{ invoice_id: 5 }] }],
    ['/transactions', 'POST', { type: 'payment', customer_id: cust, payment_method: CARD, allocations: [{ invoice_id: 'inv_nope' }] }],
    ['/transactions', 'POST', { type: 'payment', customer_id: cust, payment_method: CARD, allocations: [{ invoice_id: inv.id, amount: 'lots' }] }],
    ['/transactions', 'POST', { type: 'payment', customer_id: cust, payment_method: CARD, allocations: [{ invoice_id: inv.id }, { invoice_id: inv.id }] }],
    ['/transactions', 'POST', { type: 'payment', amount: 1, customer_id: cust, payment_method: CARD, allocations: [{ invoice_id: inv.id, amount: 2 }] }],
    ['/transactions', 'POST', { type: 'refund', amount: 1, processing_id: inv.processing_id, payment_method: CARD, allocations: [{ invoice_id: inv.id }] }],
    ['/line_items', 'POST', { invoice_id: 'inv_nope', amount: 1 }],
    ['/payment_allocations', 'POST', { invoice_id: inv.id, external_payment: true }, 'v2'],
  ];
  for (const [path, method, json, version] of cases) {
    const res = await api.request(method, path, { json, version });
    t.equal(res.status, 400, `${method} ${path} ${JSON.stringify(json)} → ${JSON.stringify(res.body)}`);
    t.equal(res.body.object, 'error');
  }
  t.match((await api.request('GET', `/invoices/${inv.id}`)).body, { status: 'unpaid', amount_due: 4.99 }, 'nothing was allocated');
});

t.test('invoice lists are tenant-scoped and filter by status and type', async (t) => {
  const cust = await customer();
  await invoice(cust, [{ amount: 1 }], { type: 'special' });
  const found = await api.request('GET', '/invoices?type=special&status=unpaid');
  t.equal(found.body.values.length, 1);
  const otherKey = await api.newKey('list-org', 'test');
  t.equal((await api.request('GET', '/invoices', { key: otherKey })).body.values.length, 0);
  t.equal((await api.request('GET', '/invoices?fields[0]=*&limit=1', { version: 'v2' })).body.object, 'list');
});
