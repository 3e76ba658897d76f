/**
 * Compensation: a card approval is an effect outside the database, so when the write that would
 * store the approved payment fails, the authorization is voided through the processor seam. The
 * database refuses the write here at its commit, by a deferred constraint trigger the test adds
 * (a description it will not store), on each way a payment is written: the one statement on its
 * own, the same statement in a transaction (an Idempotency-Key), and the generic pipeline (a
 * split, whose transaction commits only on the processor's real answer).
 */
import t from 'tap';
import type { CardAuthorization, PaymentProcessor } from '../api/processor.ts';
import { startTestApi } from './helpers/api.ts';

const DECLINED = '4000000000000002';
const voided: Array<{ number: string; statusCode: string }> = [];

const processor: PaymentProcessor = {
  async authorizeCard(number: string): Promise<CardAuthorization> {
    return number === DECLINED
      ? { approved: false, statusCode: 'card_declined', message: 'Declined by the test processor' }
      : { approved: true, statusCode: 'approved', message: 'Approved' };
  },
  async voidAuthorization(number, authorization) {
    voided.push({ number, statusCode: authorization.statusCode });
  },
  bankWillReject: () => false,
};

const api = await startTestApi(t, {}, { processor });
await api.db.raw(`
  create function refuse_test_description() returns trigger language plpgsql as $$
  begin
    if new.data->>'description' = 'refused by the database' then raise exception 'refused at commit' using errcode = '23514'; end if;
    return null;
  end $$;
  create constraint trigger refuses_test_description after insert on transactions deferrable initially deferred
    for each row execute function refuse_test_description();`);
const shop = (await api.request('POST', '/processing_accounts', { json: { name: 'Shop' } })).body;
const branch = (await api.request('POST', '/processing_accounts', { json: { name: 'Branch' } })).body;
const card = (number: string) => ({ type: 'card', card: { card_number: number, expiry: '12/35' } });
const REFUSED = 'refused by the database';

async function voidsDuring(make: () => Promise<{ status: number; body: unknown }>): Promise<{ status: number; voids: typeof voided }> {
  const from = voided.length;
  const res = await make();
  return { status: res.status, voids: voided.slice(from) };
}

const storedRefused = async () => (await api.db.raw(`select count(*)::int as n from transactions where data->>'description' = ?`, [REFUSED])).rows[0].n;

t.test('the one-statement payment: its write fails, its approval is voided', async (t) => {
  const { status, voids } = await voidsDuring(() => api.request('POST', '/transactions', {
    json: { type: 'payment', amount: 5, processing_id: shop.id, description: REFUSED, payment_method: card('4111111111111111') },
  }));
  t.equal(status, 500);
  t.same(voids, [{ number: '4111111111111111', statusCode: 'approved' }]);
});

t.test('the one statement in a transaction (an Idempotency-Key): its write fails, its approval is voided', async (t) => {
  const { status, voids } = await voidsDuring(() => api.request('POST', '/transactions', {
    headers: { 'Idempotency-Key': 'compensation-1' },
    json: { type: 'payment', amount: 5, processing_id: shop.id, description: REFUSED, payment_method: card('5555555555554444') },
  }));
  t.equal(status, 500);
  t.same(voids, [{ number: '5555555555554444', statusCode: 'approved' }]);
});

t.test('the generic pipeline (a split): its transaction fails, its approval is voided', async (t) => {
  const { status, voids } = await voidsDuring(() => api.request('POST', '/transactions', {
    version: 'v2',
    json: { type: 'payment', amount: 10, description: REFUSED, sender: { method: card('4242424242424242') }, receiver: { account_id: shop.id }, transfers: [{ amount: 4, receiver: { account_id: branch.id } }] },
  }));
  t.equal(status, 500);
  t.same(voids, [{ number: '4242424242424242', statusCode: 'approved' }]);
  t.equal(await storedRefused(), 0, 'nothing of the refused payments was stored');
});

t.test('a stored payment, approved or declined, is never voided', async (t) => {
  const { status, voids } = await voidsDuring(() => api.request('POST', '/transactions', {
    json: { type: 'payment', amount: 5, processing_id: shop.id, payment_method: card('4111111111111111') },
  }));
  t.equal(status, 200);
  const declined = await voidsDuring(() => api.request('POST', '/transactions', {
    version: 'v2',
    json: { type: 'payment', amount: 10, sender: { method: card(DECLINED) }, receiver: { account_id: shop.id }, transfers: [{ amount: 4, receiver: { account_id: branch.id } }] },
  }));
  t.equal(declined.status, 400, 'the decline is stored and answered as one');
  t.same([...voids, ...declined.voids], []);
});
