/**
 * A delivery's body renders money as the API does (decimal units, never stored minor units):
 * every money field in `triggered_on.value` of each money trigger equals what a GET of the same
 * object answers.
 */
import t from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver } from './helpers/receiver.ts';

const api = await startTestApi(t);
await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50' });
const receiver = await startReceiver(t);
const TRIGGERS = ['payment', 'processed', 'refund', 'transfer', 'transaction:operation'];
for (const trigger of TRIGGERS) {
  const res = await api.request('POST', '/webhooks', { json: { trigger, url: receiver.url } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
}
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };

interface Delivered {
  trigger: string;
  triggered_on: { id: string; object: string; value: Record<string, unknown> };
}

t.test('money in every delivered body equals what the API shows for the same object', async (t) => {
  const shop = (await api.request('POST', '/accounts', { version: 'v2', json: { type: 'processing', name: 'Split shop' } })).body;
  const payment = (await api.request('POST', '/transactions', { json: { type: 'payment', amount: 7.99, payment_method: CARD } })).body;
  const split = await api.request('POST', '/transactions', {
    version: 'v2',
    json: { type: 'payment', amount: 12.5, sender: { method: CARD }, transfers: [{ receiver: { account_id: shop.id }, amount: 2.25 }] },
  });
  t.equal(split.status, 200, JSON.stringify(split.body));
  const refund = await api.request('POST', '/transactions', { json: { type: 'refund', amount: 4, ledger: [{ assoc_transaction_id: payment.id }] } });
  t.equal(refund.status, 200, JSON.stringify(refund.body));

  const events = Number((await api.db('events').whereIn('trigger', TRIGGERS).count('* as n'))[0].n);
  t.ok(events >= 8, `${events} events to deliver`);
  const received = await receiver.waitFor(events, 20_000);
  t.equal(received.length, events, 'every event delivered');
  const bodies = received.map((r) => JSON.parse(r.body) as Delivered);
  t.same([...new Set(bodies.map((b) => b.trigger))].sort(), [...TRIGGERS].sort(), 'each trigger fired');

  for (const body of bodies) {
    const { value, id } = body.triggered_on;
    const where = `${body.trigger} of ${id}`;
    if (body.trigger === 'transaction:operation') {
      const operation = await api.request('GET', `/transaction_operations/${value.id}`);
      t.equal(operation.status, 200, JSON.stringify(operation.body));
      t.equal(value.amount, operation.body.amount, where);
    } else if (body.trigger === 'transfer') {
      const owner = await api.request('GET', `/transactions/${value.transaction_id}`, { version: 'v2' });
      const transfer = owner.body.transfers.find((x: { id: string }) => x.id === id);
      t.equal(value.amount, transfer?.amount, where);
      t.equal(value.amount, 2.25);
    } else {
      const shown = await api.request('GET', `/transactions/${id}`);
      t.equal(value.amount, shown.body.amount, where);
    }
  }
  const paymentBody = bodies.find((b) => b.trigger === 'payment' && b.triggered_on.id === payment.id);
  t.equal(paymentBody?.triggered_on.value.amount, 7.99, 'a 7.99 payment is 7.99 in its webhook, never 799');
});
