/**
 * Transaction operations: every step of a transaction, on every write path (API, worker), is one
 * operation row with a `transaction:operation` event, in the same database transaction.
 */
import t from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t, { SETTLE_PROCESSING_DELAY: '50' });
await startTestWorker(t, api.databaseUrl, { SETTLE_PROCESSING_DELAY: '50', WORKER_POLL_INTERVAL: '50' });
await api.request('POST', '/processing_accounts', { json: { name: 'Shop' } });
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35' } };

function operationsOf(id: string, until = (ops: any[]) => ops.length > 0): Promise<any[]> {
  return eventually(async () => (await api.request('GET', `/transaction_operations?transaction_id=${id}&order_by=created_at`, { version: 'v2' })).body.values as any[], until, 5000, 50);
}

t.test('authorize, capture and refund are operations of their transactions, each with an event', async (t) => {
  const auth = (await api.request('POST', '/transactions', { json: { type: 'payment', amount: 12.5, payment_method: CARD, status: 'authorized' } })).body;
  await api.request('PUT', `/transactions/${auth.id}`, { json: { status: 'processed' } });
  const ops = await operationsOf(auth.id, (o) => o.length >= 2);
  t.match(ops, [
    { object: 'transaction_operation', type: 'authorize', status: 'complete', amount: 12.5, transaction_id: auth.id },
    { type: 'capture', status: 'complete', amount: 12.5 },
  ]);
  const refund = (await api.request('POST', '/transactions', { json: { type: 'refund', amount: 2.5, ledger: [{ assoc_transaction_id: auth.id }] } })).body;
  t.match(await operationsOf(refund.id), [{ type: 'refund', amount: 2.5 }]);
  const events = await api.db('events').where({ trigger: 'transaction:operation', object_id: auth.id });
  t.equal(events.length, 2, 'one event per operation');
  t.match(events.map((e: any) => e.value.type).sort(), ['authorize', 'capture']);
  t.same(events.map((e: any) => e.id).filter((id: string) => !/^evt_[0-9A-Za-z]{24}$/.test(id)), [], 'written by the database, with ids of the one format: evt_ and 24 base62');
});

t.test('a decline is a failed operation; the worker\'s steps are operations too', async (t) => {
  const declined = (await api.request('POST', '/transactions', { json: { type: 'payment', amount: 5, payment_method: { type: 'card', card: { card_number: '4111111111119903', expiry: '12/35' } } } })).body.details;
  t.match(await operationsOf(declined.id), [{ type: 'decline', status: 'failed' }]);
  const v2 = (await api.request('POST', '/transactions', { version: 'v2', json: { type: 'payment', amount: 7, sender: { method: CARD } } })).body;
  t.match(await operationsOf(v2.id), [{ type: 'process', status: 'complete', amount: 7 }], 'processed by the worker');
  const rejected = (await api.request('POST', '/transactions', { json: { type: 'payment', amount: 3, payment_method: { type: 'bank_account', bank_account: { account_number: '000111222', routing_number: '036001808' } } } })).body;
  t.match(await operationsOf(rejected.id, (o) => o.length >= 2), [{ type: 'process' }, { type: 'reject' }], 'the bank rejection, by the worker');
});

t.test('operations are read-only and tenant-scoped; an attrs edit is no operation', async (t) => {
  const paid = (await api.request('POST', '/transactions', { json: { type: 'payment', amount: 1, payment_method: CARD } })).body;
  await api.request('PUT', `/transactions/${paid.id}`, { json: { attrs: { note: 'x' } } });
  t.equal((await operationsOf(paid.id)).length, 1, 'only the process step');
  t.equal((await api.request('POST', '/transaction_operations', { version: 'v2', json: {} })).status, 400);
  const other = await api.newKey('other-org', 'test');
  t.equal((await api.request('GET', '/transaction_operations', { key: other, version: 'v2' })).body.values.length, 0);
});
