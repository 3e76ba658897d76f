/**
 * Payment links (CONTRACT §12): both versions, links for an invoice, payments through a link,
 * statuses and their `payment_link:status` events, the hosted-page `url`.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';

process.env.SETTLE_PUBLIC_URL = 'https://pay.example.test/';
const api = await startTestApi(t);
// A new org's test environment starts with its default processing account (CONTRACT §3).
const biller = (await api.request('GET', '/processing_accounts?order_by=created_at&limit=1')).body.values[0].id;
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35' } };

async function link(json: Record<string, unknown>, version?: string) {
  const res = await api.request('POST', '/payment_links', { json, version });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body;
}

async function statusEvents(id: string): Promise<unknown[]> {
  const found = await api.db('events').where({ object_id: id, trigger: 'payment_link:status' }).orderBy('seq');
  return found.map((e: { value: unknown }) => e.value);
}

t.test('a v1 link shows its biller, type, status and hosted-page url; v2 shows the same row', async (t) => {
  const created = await link({ type: 'one_time', description: 'Payment Request', amount: 10.0, processing_id: biller });
  t.match(created, { object: 'payment_link', type: 'one_time', description: 'Payment Request', amount: 10, processing_id: biller, status: 'active', amount_editable: false });
  t.match(created.id, /^pay_[0-9A-Za-z]{21,}$/);
  t.equal(created.url, `https://pay.example.test/pay/${created.id}`);
  const v2 = await api.request('GET', `/payment_links/${created.id}`, { version: 'v2' });
  t.match(v2.body, { object: 'payment_link', biller: { account_id: biller }, url: created.url, type: 'one_time' });
  const reusable = await link({ type: 'reusable', description: 'Dues' }, 'v2');
  t.match(reusable, { type: 'reusable', amount: null, amount_editable: true, biller: { account_id: biller } }, 'no amount: the payer enters it');
});

t.test('type and description are required; malformed input is a 400', async (t) => {
  const cases: Array<Record<string, unknown>> = [
    { description: 'x' },
    { type: 'sometimes', description: 'x' },
    { type: 'one_time' },
    { type: 'one_time', description: 'x', amount: -5 },
    { type: 'one_time', description: 'x', amount: 'ten' },
    { type: 'one_time', description: 'x', processing_id: 'acct_nope' },
    { type: 'one_time', description: 'x', customer_id: biller },
    { type: 'one_time', description: 'x', invoice_id: 'inv_nope' },
    { type: 'one_time', description: 'x', status: 'completed' },
    { type: 'one_time', description: 'x', checkout_options: 'card' },
  ];
  for (const json of cases) {
    const res = await api.request('POST', '/payment_links', { json });
    t.equal(res.status, 400, `${JSON.stringify(json)} → ${JSON.stringify(res.body)}`);
    t.equal(res.body.object, 'error');
  }
});

t.test('a link for an invoice collects its balance for its payer, with its description', async (t) => {
  const cust = (await api.request('POST', '/customers', { json: { name: 'Payer' } })).body.id;
  const inv = (await api.request('POST', '/invoices', { json: { customer_id: cust, due_date: '2026-11-23', description: 'November rent', items: [{ amount: 12.34 }] } })).body;
  const created = await link({ type: 'one_time', invoice_id: inv.id });
  t.match(created, { amount: 12.34, description: 'November rent', customer_id: cust, processing_id: inv.processing_id, invoice_id: inv.id });
  const wrongAmount = await api.request('POST', '/payment_links', { json: { type: 'one_time', invoice_id: inv.id, amount: 1 } });
  t.equal(wrongAmount.status, 400);
  const paid = await api.request('POST', '/transactions?fields=*,payment_link_id', { json: { type: 'payment', payment_link_id: created.id, payment_method: CARD } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  t.match(paid.body, { amount: 12.34, customer_id: cust, processing_id: inv.processing_id, payment_link_id: created.id });
  t.equal((await api.request('GET', `/invoices/${inv.id}`)).body.status, 'paid', 'the payment pays the invoice');
});

t.test('a one-time link is paid once and completes, emitting payment_link:status', async (t) => {
  const created = await link({ type: 'one_time', description: 'Once', amount: 5 });
  const wrong = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 6, payment_link_id: created.id, payment_method: CARD } });
  t.equal(wrong.status, 400, 'the amount is fixed');
  const paid = await api.request('POST', '/transactions', { json: { type: 'payment', payment_link_id: created.id, payment_method: CARD } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  t.equal(paid.body.amount, 5);
  t.notOk('payment_link_id' in paid.body, 'a non-default field');
  const after = await api.request('GET', `/payment_links/${created.id}`);
  t.match(after.body, { status: 'completed', transaction_id: paid.body.id });
  t.same(await statusEvents(created.id), ['completed'], 'triggered_on.value is the new status');
  const again = await api.request('POST', '/transactions', { json: { type: 'payment', payment_link_id: created.id, payment_method: CARD } });
  t.equal(again.status, 400);
  t.equal((await api.request('PUT', `/payment_links/${created.id}`, { json: { status: 'active' } })).status, 400, 'completed is final');
  const listed = await api.request('GET', `/transactions?payment_link_id=${created.id}`);
  t.equal(listed.body.values.length, 1);
});

t.test('concurrent payments through a one-time link: exactly one is taken', async (t) => {
  const created = await link({ type: 'one_time', description: 'Race', amount: 2 });
  const attempts = await Promise.all(Array.from({ length: 6 }, () =>
    api.request('POST', '/transactions', { json: { type: 'payment', payment_link_id: created.id, payment_method: CARD } })));
  t.equal(attempts.filter((r) => r.status === 200).length, 1);
  t.equal(attempts.filter((r) => r.status === 400).length, 5);
});

t.test('a reusable link stays active; an editable amount is the payer\'s; inactive links take nothing', async (t) => {
  const created = await link({ type: 'reusable', description: 'Donations', amount: 3, amount_editable: true });
  for (const amount of [3, 7.5]) {
    const paid = await api.request('POST', '/transactions', { json: { type: 'payment', amount, payment_link_id: created.id, payment_method: CARD } });
    t.equal(paid.status, 200, JSON.stringify(paid.body));
  }
  t.equal((await api.request('GET', `/payment_links/${created.id}`)).body.status, 'active');
  const disabled = await api.request('PUT', `/payment_links/${created.id}`, { version: 'v2', json: { status: 'inactive' } });
  t.equal(disabled.status, 200, JSON.stringify(disabled.body));
  t.same(await statusEvents(created.id), ['inactive']);
  const refused = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 1, payment_link_id: created.id, payment_method: CARD } });
  t.equal(refused.status, 400);
  t.equal((await api.request('PUT', `/payment_links/${created.id}`, { json: { status: 'completed' } })).status, 400, 'only a payment completes a link');
  t.equal((await api.request('PUT', `/payment_links/${created.id}`, { json: { status: 'active' } })).status, 200, 'inactive can be re-enabled');
});

t.test('deleting a link; another tenant cannot see or use it', async (t) => {
  const created = await link({ type: 'reusable', description: 'Gone soon', amount: 1 });
  const otherKey = await api.newKey('other-links', 'test');
  t.equal((await api.request('GET', `/payment_links/${created.id}`, { key: otherKey })).status, 404);
  t.equal((await api.request('GET', '/payment_links', { key: otherKey })).body.values.length, 0);
  const cross = await api.request('POST', '/transactions', { key: otherKey, json: { type: 'payment', payment_link_id: created.id, payment_method: CARD } });
  t.equal(cross.status, 400);
  t.equal((await api.request('DELETE', `/payment_links/${created.id}`)).status, 200);
  t.equal((await api.request('GET', `/payment_links/${created.id}`)).status, 404);
  t.equal((await api.request('GET', '/payment_links?type=reusable&limit=1', { version: 'v2' })).body.object, 'list');
});
