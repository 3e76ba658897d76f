/**
 * Money rules hold per request, not only per row: every refund a request plans (bulk items,
 * a payment linked twice) counts against the same original, and one request names an object once.
 */
import t from 'tap';
import { startTestApi, type TestApi } from './helpers/api.ts';

const api = await startTestApi(t);
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35' } };
await api.request('POST', '/processing_accounts', { json: { name: 'Shop' } });

async function payment(a: TestApi, amount: number, key?: string) {
  const res = await a.request('POST', '/transactions', { key, json: { type: 'payment', amount, payment_method: CARD } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body;
}

async function refundedTotal(paymentId: string): Promise<number> {
  const rows = await api.db('transfers').where({ assoc_transaction_id: paymentId, entry_type: 'refund' }).sum('amount as total');
  return Number(rows[0].total ?? 0);
}

t.test('a bulk create of three full refunds of one payment is refused as a whole', async (t) => {
  const paid = await payment(api, 10);
  const refund = { type: 'refund', amount: 10, ledger: [{ assoc_transaction_id: paid.id, amount: 10 }] };
  const res = await api.request('POST', '/transactions', { json: { object: 'list', values: [refund, refund, refund] } });
  t.equal(res.status, 400, JSON.stringify(res.body));
  t.same(res.body.details.values[0], {}, 'the first item alone would have been fine');
  t.match(res.body.details.values[1], { amount: /0\.00 remains/ });
  t.equal(await refundedTotal(paid.id), 0, 'nothing refunded');
});

t.test('bulk refunds that fit the payment together are accepted', async (t) => {
  const paid = await payment(api, 10);
  const part = { type: 'refund', amount: 4, ledger: [{ assoc_transaction_id: paid.id, amount: 4 }] };
  const ok = await api.request('POST', '/transactions', { json: { object: 'list', values: [part, part] } });
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  const over = await api.request('POST', '/transactions', { json: { object: 'list', values: [part] } });
  t.equal(over.status, 400, 'only 2.00 remains');
  t.equal(await refundedTotal(paid.id), 800, '8.00 refunded in all');
});

t.test('a v1 refund whose ledger names the payment twice cannot exceed it', async (t) => {
  const paid = await payment(api, 10);
  const res = await api.request('POST', '/transactions', {
    json: { type: 'refund', amount: 20, ledger: [{ assoc_transaction_id: paid.id, amount: 10 }, { assoc_transaction_id: paid.id, amount: 10 }] },
  });
  t.equal(res.status, 400, JSON.stringify(res.body));
  t.equal(await refundedTotal(paid.id), 0);
  const split = await api.request('POST', '/transactions', {
    json: { type: 'refund', amount: 10, ledger: [{ assoc_transaction_id: paid.id, amount: 6 }, { assoc_transaction_id: paid.id, amount: 4 }] },
  });
  t.equal(split.status, 200, 'two links that add up to the payment are fine');
});

t.test('a v2 refund whose transfers name the payment twice cannot exceed it', async (t) => {
  const paid = await payment(api, 10);
  const res = await api.request('POST', '/transactions', {
    version: 'v2',
    json: { type: 'refund', amount: 20, transfers: [{ assoc_transaction_id: paid.id, amount: 10 }, { assoc_transaction_id: paid.id, amount: 10 }] },
  });
  t.equal(res.status, 400, JSON.stringify(res.body));
  t.equal(await refundedTotal(paid.id), 0);
});

t.test('a bulk update naming one transaction twice is 400 and changes nothing', async (t) => {
  const first = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 5, payment_method: CARD, status: 'authorized' } });
  t.equal(first.body.status, 'authorized');
  const both = await api.request('PUT', '/transactions', {
    json: { object: 'list', values: [{ id: first.body.id, status: 'processed' }, { id: first.body.id, status: 'voided' }] },
  });
  t.equal(both.status, 400);
  t.same(both.body.details.values[1], { id: 'Named more than once in this request' });
  t.equal((await api.request('GET', `/transactions/${first.body.id}`)).body.status, 'authorized', 'neither capture nor void applied');
  const voidTwice = await api.request('PUT', '/transactions', {
    json: { object: 'list', values: [{ id: first.body.id, status: 'voided' }, { id: first.body.id, status: 'voided' }] },
  });
  t.equal(voidTwice.status, 400);
  const events = await api.db('events').where({ object_id: first.body.id }).whereIn('trigger', ['void', 'processed']);
  t.equal(events.length, 0, 'no void or processed event');
  const del = await api.request('DELETE', '/customers', { json: { object: 'list', values: [{ id: 'acct_x' }, { id: 'acct_x' }] } });
  t.equal(del.status, 400, 'bulk delete too');
});
