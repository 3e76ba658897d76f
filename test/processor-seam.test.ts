/**
 * The payment processor is a seam of the web process: a processor handed to `startWeb` decides
 * the cards of real requests in place of the sandbox, declines included.
 */
import t from 'tap';
import type { PaymentProcessor } from '../api/processor.ts';
import { startTestApi } from './helpers/api.ts';

const decliningEverything: PaymentProcessor = {
  authorizeCard: async () => ({ approved: false, statusCode: 'insufficient_bal', message: 'Declined: insufficient funds' }),
  voidAuthorization: async () => {},
  bankWillReject: () => false,
};
const approvingEverything: PaymentProcessor = {
  authorizeCard: async () => ({ approved: true, statusCode: 'approved', message: 'Approved' }),
  voidAuthorization: async () => {},
  bankWillReject: () => false,
};

const card = (cardNumber: string) => ({ type: 'card', card: { card_number: cardNumber, expiry: '12/35' } });

t.test('a processor that declines every card declines a 4242 payment with its code, and the decline is stored', async (t) => {
  const api = await startTestApi(t, {}, { processor: decliningEverything });
  const res = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 5, payment_method: card('4242424242424242') } });
  t.equal(res.status, 400, JSON.stringify(res.body));
  t.equal(res.body.error_type, 'TransactionDeclined');
  t.equal(res.body.details.status_code, 'insufficient_bal');
  t.equal(res.body.details.status_message, 'Declined: insufficient funds');
  const stored = await api.db('transactions').where({ id: res.body.details.id }).first();
  t.equal(stored.data.status, 'declined');
  t.equal(stored.data.status_code, 'insufficient_bal');
});

t.test('a processor that declines every card refuses a reverse-flow part paid by card', async (t) => {
  const api = await startTestApi(t, {}, { processor: decliningEverything });
  const receiver = (await api.request('POST', '/processing_accounts', { json: { name: 'Shop' } })).body;
  const sender = (await api.request('POST', '/customers', { json: { name: 'Payer', email: 'payer@example.com' } })).body;
  const method = (await api.request('POST', '/payment_methods', { json: { ...card('4242424242424242'), account_id: sender.id } })).body;
  t.ok(method.id, JSON.stringify(method));
  const res = await api.request('POST', '/transactions', {
    version: 'v2',
    json: { type: 'payment', receiver: { account_id: receiver.id }, transfers: [{ amount: 5, sender: { account_id: sender.id, method_id: method.id } }] },
  });
  t.equal(res.status, 400, JSON.stringify(res.body));
  t.same(res.body.details, { transfers: { 0: { sender: { method_id: 'Declined: insufficient funds' } } } });
  t.equal(Number((await api.db('transactions').count('* as n'))[0].n), 0, 'nothing is stored');
});

t.test('a processor that approves every card processes the sandbox decline number 4111 1111 1111 9903', async (t) => {
  const api = await startTestApi(t, {}, { processor: approvingEverything });
  const res = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 5, payment_method: card('4111111111119903') } });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.equal(res.body.status, 'processed');
  t.equal(res.body.status_code, 'approved');
  const stored = await api.db('transactions').where({ id: res.body.id }).first();
  t.equal(stored.data.status, 'processed');
});
