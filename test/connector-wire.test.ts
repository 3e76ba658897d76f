/**
 * An orchestrator's connector, unchanged: every request Hyperswitch's Payload connector sends
 * (crates/hyperswitch_connectors/src/connectors/payload*), sent with exactly its body, and every
 * answer read as its response structs read it (required fields present and of their types, enums
 * only their variants; helpers/serdeShape.ts). A webhook is parsed as its event struct and its
 * `X-Payload-Signature` verified the way the connector does (strip `sha256=`, hex-decode, compare
 * with HMAC-SHA256 of the raw body).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import t, { type Test } from 'tap';
import type { PaymentProcessor } from '../api/processor.ts';
import { sandboxProcessor } from '../api/families/transactions/sandbox.ts';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver, type Received } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';
import { option, serdeErrors, struct, variants, vec, type Shape } from './helpers/serdeShape.ts';

/** Card numbers the processor was asked about, in order: the seam the verification goes through. */
const asked: string[] = [];
const processor: PaymentProcessor = {
  authorizeCard: (number) => {
    asked.push(number);
    return sandboxProcessor.authorizeCard(number);
  },
  bankWillReject: sandboxProcessor.bankWillReject,
  voidAuthorization: sandboxProcessor.voidAuthorization,
};
const api = await startTestApi(t, {}, { processor });
await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50' }, { processor });

// The connector's response structs, field by field (types as serde reads them).
const PAYMENT_STATUS = variants('authorized', 'declined', 'processed', 'processing', 'rejected', 'voided');
const CARDS_RESPONSE = struct({
  amount: 'f64',
  avs: option(variants('unknown', 'no_match', 'zip', 'street', 'street_and_zip')),
  customer_id: option('string'),
  id: 'string',
  payment_method_id: option('string'),
  processing_id: option('string'),
  processing_method_id: option('string'),
  ref_number: option('string'),
  status: PAYMENT_STATUS,
  status_code: option('string'),
  status_message: option('string'),
  type: option('string'),
});
const REFUND_RESPONSE = struct({
  amount: 'f64',
  id: 'string',
  ledger: vec(struct({ amount: 'f64', assoc_transaction_id: 'string', id: 'string' })),
  payment_method_id: option('string'),
  processing_id: option('string'),
  ref_number: option('string'),
  status: variants('declined', 'processed', 'processing', 'rejected'),
  status_code: option('string'),
  status_message: option('string'),
});
const CUSTOMER_RESPONSE = struct({ id: 'string', object: 'string', keep_active: 'bool' });
const PAYMENT_METHOD_RESPONSE = struct({
  id: 'string',
  type: 'string',
  status: variants('active', 'inactive'),
  verification_status: variants('not-verified', 'verified', 'failed'),
});
const WEBHOOK_REGISTER_RESPONSE = struct({ id: 'string', trigger: 'string', url: 'string' });
const WEBHOOK_EVENT = struct({
  object: 'string',
  trigger: variants('payment', 'processed', 'authorized', 'credit', 'refund', 'reversal', 'void', 'automatic_payment', 'decline', 'deposit',
    'reject', 'payment_activation:status', 'payment_link:status', 'processing_status', 'bank_account_reject', 'chargeback',
    'chargeback_reversal', 'transaction:operation', 'transaction:operation:clear'),
  webhook_id: 'string',
  triggered_at: 'string',
  triggered_on: struct({ id: option('string'), object: 'string', value: option('any') }),
  url: 'string',
});
const ERROR_RESPONSE = struct({ error_type: 'string', error_description: 'string', object: 'string', details: option('any') });

/** The body as the connector's struct reads it; a failure names where serde would stop. */
function parses(t: Test, body: unknown, shape: Shape, what: string): void {
  t.same(serdeErrors(body, shape), [], `${what} parses as the connector's struct`);
}

const BILLING = { city: 'Austin', country_code: 'US', postal_code: '78701', state_province: 'TX', street_address: '1 Congress Ave' };
const CARD = { card_number: '4242424242424242', expiry: '12/35', card_code: '123' };
const BANK = { account_class: 'personal', account_currency: 'USD', account_number: '123456789', account_type: 'checking', routing_number: '036001808' };

/** What the connector's authorize flow sends for a card (JSON; `status: authorized` for manual capture). */
function cardPayment(amount: string, extra: Record<string, unknown> = {}) {
  return { amount, payment_method: { type: 'card', card: CARD, billing_address: BILLING, keep_active: false }, type: 'payment', ...extra };
}

t.test('the checker fails as serde would: a missing or mistyped required field, an unknown variant', async (t) => {
  t.match(serdeErrors({ amount: 1, id: 'txn_1', status: 'processed' }, REFUND_RESPONSE), ['$.ledger: missing field']);
  t.match(serdeErrors({ amount: '1.00', id: 'txn_1', status: 'processed' }, CARDS_RESPONSE), ['$.amount: invalid type string, expected f64']);
  t.match(serdeErrors({ amount: 1, id: 'txn_1', status: 'approved' }, CARDS_RESPONSE), [/unknown variant "approved"/]);
  t.same(serdeErrors({ amount: 1, id: 'txn_1', status: 'processed', extra: [1] }, CARDS_RESPONSE), [], 'unknown fields are ignored');
});

t.test('customer create with keep_active', async (t) => {
  const res = await api.request('POST', '/customers', { json: { keep_active: true, email: 'ada@example.com', name: 'Ada Lovelace' } });
  t.equal(res.status, 200, JSON.stringify(res.body));
  parses(t, res.body, CUSTOMER_RESPONSE, 'the customer');
  t.equal(res.body.keep_active, true);
});

t.test('card payment, automatic capture; sync; refund; refund sync', async (t) => {
  const customer = (await api.request('POST', '/customers', { json: { keep_active: true, email: 'grace@example.com', name: 'Grace Hopper' } })).body;
  const paid = await api.request('POST', '/transactions', { json: cardPayment('10.00', { customer_id: customer.id, description: 'Order 1', attrs: { order: '1' } }) });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  parses(t, paid.body, CARDS_RESPONSE, 'the payment');
  t.equal(paid.body.status, 'processed');

  const synced = await api.request('GET', `/transactions/${paid.body.id}`);
  parses(t, synced.body, CARDS_RESPONSE, 'the synced payment');

  const refund = await api.request('POST', '/transactions', { json: { type: 'refund', amount: '4.00', ledger: [{ assoc_transaction_id: paid.body.id }] } });
  t.equal(refund.status, 200, JSON.stringify(refund.body));
  parses(t, refund.body, REFUND_RESPONSE, 'the refund');
  t.same(refund.body.ledger.map((e: any) => [e.assoc_transaction_id, Math.abs(e.amount)]), [[paid.body.id, 4]], 'the refund ties to the payment');
  const refundSync = await api.request('GET', `/transactions/${refund.body.id}`);
  parses(t, refundSync.body, REFUND_RESPONSE, 'the synced refund');
});

t.test('card payment, manual capture; capture; void', async (t) => {
  const authorized = await api.request('POST', '/transactions', { json: cardPayment('12.00', { status: 'authorized' }) });
  t.equal(authorized.status, 200, JSON.stringify(authorized.body));
  parses(t, authorized.body, CARDS_RESPONSE, 'the authorization');
  t.equal(authorized.body.status, 'authorized');
  const captured = await api.request('PUT', `/transactions/${authorized.body.id}`, { json: { status: 'processed' } });
  parses(t, captured.body, CARDS_RESPONSE, 'the capture');
  t.equal(captured.body.status, 'processed');

  const another = (await api.request('POST', '/transactions', { json: cardPayment('3.00', { status: 'authorized' }) })).body;
  const voided = await api.request('PUT', `/transactions/${another.id}`, { json: { status: 'voided' } });
  parses(t, voided.body, CARDS_RESPONSE, 'the void');
  t.equal(voided.body.status, 'voided');
});

t.test('zero-amount setup stores the card; a mandate payment by its payment_method_id', async (t) => {
  const before = asked.length;
  const setup = await api.request('POST', '/transactions', {
    json: { amount: '0', payment_method: { type: 'card', card: CARD, billing_address: BILLING, keep_active: true }, type: 'payment' },
  });
  t.equal(setup.status, 200, JSON.stringify(setup.body));
  parses(t, setup.body, CARDS_RESPONSE, 'the setup');
  t.equal(setup.body.status, 'processed');
  t.equal(setup.body.amount, 0);
  t.same(asked.slice(before), [CARD.card_number], 'the processor was asked about the card');
  t.ok(setup.body.payment_method_id, 'a payment method id to charge later');

  for (const status of [undefined, 'authorized']) {
    const mandate = await api.request('POST', '/transactions', { json: { amount: '25.00', type: 'payment', payment_method_id: setup.body.payment_method_id, ...(status && { status }) } });
    t.equal(mandate.status, 200, JSON.stringify(mandate.body));
    parses(t, mandate.body, CARDS_RESPONSE, `the mandate payment (${status ?? 'automatic'})`);
    t.equal(mandate.body.status, status ?? 'processed');
  }
});

t.test('ACH setup through /payment_methods; ACH debit', async (t) => {
  const customer = (await api.request('POST', '/customers', { json: { keep_active: true, email: 'ach@example.com', name: 'Ach Payer' } })).body;
  const method = await api.request('POST', '/payment_methods', {
    json: { type: 'bank_account', bank_account: BANK, account_holder: 'Ach Payer', keep_active: true, customer_id: customer.id },
  });
  t.equal(method.status, 200, JSON.stringify(method.body));
  parses(t, method.body, PAYMENT_METHOD_RESPONSE, 'the bank payment method');
  t.match(method.body, { status: 'active', verification_status: 'verified', bank_account: { account_currency: 'USD', account_class: 'personal' } });

  const debit = await api.request('POST', '/transactions', {
    json: { amount: '20.00', type: 'payment', descriptor: 'ACME ORDER 77', payment_method: { type: 'bank_account', bank_account: BANK, account_holder: 'Ach Payer', keep_active: true } },
  });
  t.equal(debit.status, 200, JSON.stringify(debit.body));
  parses(t, debit.body, CARDS_RESPONSE, 'the ACH debit');
  t.equal(debit.body.descriptor, 'ACME ORDER 77');
});

t.test('an error answer parses as the connector error struct', async (t) => {
  const res = await api.request('POST', '/transactions', { json: cardPayment('0') });
  t.equal(res.status, 400);
  parses(t, res.body, ERROR_RESPONSE, 'the error');
});

t.test('webhook registration at POST /webhooks/ (form); a delivery parses as the event and its signature verifies', async (t) => {
  const receiver = await startReceiver(t);
  const form = new URLSearchParams({ trigger: 'payment', url: receiver.url }).toString();
  const registered = await api.request('POST', '/webhooks/', { form });
  t.equal(registered.status, 200, JSON.stringify(registered.body));
  parses(t, registered.body, WEBHOOK_REGISTER_RESPONSE, 'the webhook');
  const secret = String(registered.body.sender_secret);

  const paid = (await api.request('POST', '/transactions', { json: cardPayment('7.99') })).body;
  const ofPayment = (r: Received) => JSON.parse(r.body).triggered_on?.id === paid.id;
  const delivery = (await eventually(() => receiver.received.find(ofPayment), Boolean, 20_000))!;
  const event = JSON.parse(delivery.body);
  parses(t, event, WEBHOOK_EVENT, 'the webhook body');
  t.match(event, { object: 'webhook_trigger', webhook_id: registered.body.id, url: receiver.url, triggered_on: { id: paid.id } });
  t.match(event.triggered_at, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);

  const header = String(delivery.headers['x-payload-signature'] ?? '');
  t.ok(header.startsWith('sha256='), 'the signature names its algorithm');
  const signature = Buffer.from(header.slice('sha256='.length), 'hex');
  const expected = createHmac('sha256', secret).update(Buffer.from(delivery.body)).digest();
  t.ok(signature.length === expected.length && timingSafeEqual(signature, expected), 'HMAC-SHA256 of the raw body under the secret');
  const tampered = createHmac('sha256', secret).update(delivery.body.replace('7.99', '9.99')).digest();
  t.notOk(timingSafeEqual(signature, tampered), 'a changed body does not verify');
});

t.test('keep_active on accounts: accepted on create and update in both versions, read back', async (t) => {
  const created = await api.request('POST', '/accounts', { version: 'v2', json: { type: 'customer', name: 'Kept', keep_active: false } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.equal(created.body.keep_active, false);
  const updated = await api.request('PUT', `/accounts/${created.body.id}`, { version: 'v2', json: { keep_active: true } });
  t.equal(updated.body.keep_active, true);
  const v1 = await api.request('PUT', `/customers/${created.body.id}`, { form: 'keep_active=false' });
  t.equal(v1.status, 200, JSON.stringify(v1.body));
  t.equal((await api.request('GET', `/customers/${created.body.id}`)).body.keep_active, false);
  t.equal((await api.request('POST', '/customers', { json: { name: 'Defaulted' } })).body.keep_active, true, 'kept unless said otherwise');
});

t.test('a method made with keep_active: false pays once and is not kept for later', async (t) => {
  const customer = (await api.request('POST', '/customers', { json: { name: 'Once' } })).body;
  const paid = await api.request('POST', '/transactions', { json: cardPayment('5.00', { customer_id: customer.id }) });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  const method = await api.request('GET', `/payment_methods/${paid.body.payment_method_id}`);
  t.match(method.body, { keep_active: false, status: 'inactive' });
  const again = await api.request('POST', '/transactions', { json: { type: 'payment', amount: '5.00', payment_method_id: paid.body.payment_method_id } });
  t.equal(again.status, 400);
  t.match(again.body, { error_type: 'InvalidAttributes', details: { payment_method_id: /not kept/ } });
  const v2 = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'payment', amount: 5, sender: { method_id: paid.body.payment_method_id } } });
  t.equal(v2.status, 400, 'refused in v2 too');
  const refund = await api.request('POST', '/transactions', { json: { type: 'refund', amount: '5.00', ledger: [{ assoc_transaction_id: paid.body.id }] } });
  t.equal(refund.status, 200, 'its payment can still be refunded');

  const kept = await api.request('POST', '/payment_methods', { json: { type: 'card', card: CARD, customer_id: customer.id } });
  t.match(kept.body, { keep_active: true, status: 'active' }, 'kept by default');
  const dropped = await api.request('PUT', `/payment_methods/${kept.body.id}`, { json: { keep_active: false } });
  t.match(dropped.body, { keep_active: false, status: 'inactive' }, 'status follows keep_active on update');
  const reused = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 1, payment_method_id: kept.body.id } });
  t.equal(reused.status, 400);

  const payer = (await api.request('POST', '/accounts', { version: 'v2', json: { type: 'customer', name: 'Defaulted once' } })).body;
  await api.request('POST', '/payment_methods', { version: 'v2', json: { type: 'card', card: CARD, account_id: payer.id, keep_active: false, account_defaults: { paying: 'payments' } } });
  const byDefault = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 1, customer_id: payer.id } });
  t.equal(byDefault.status, 400, 'a method not kept is never the payer\'s default either');
});

t.test('descriptor: up to 32 characters, read back; longer is InvalidAttributes', async (t) => {
  const v2 = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'payment', amount: 2, descriptor: 'SHOP*ORDER 12', sender: { method: { type: 'card', card: CARD } } } });
  t.equal(v2.status, 200, JSON.stringify(v2.body));
  t.equal((await api.request('GET', `/transactions/${v2.body.id}`, { version: 'v2' })).body.descriptor, 'SHOP*ORDER 12');
  const long = await api.request('POST', '/transactions', { json: cardPayment('2.00', { descriptor: 'x'.repeat(33) }) });
  t.equal(long.status, 400);
  t.match(long.body, { error_type: 'InvalidAttributes', details: { descriptor: /at most 32/ } });
});

t.test('bank accounts: account_currency defaults to the payment\'s currency; the sandbox bank\'s verdict is verification_status', async (t) => {
  const { account_currency: _omitted, ...noCurrency } = BANK;
  const cad = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 3, currency: 'CAD', payment_method: { type: 'bank_account', bank_account: noCurrency } } });
  t.equal(cad.status, 200, JSON.stringify(cad.body));
  const method = (await api.request('GET', `/payment_methods/${cad.body.payment_method_id}`)).body;
  t.match(method.bank_account, { account_currency: 'CAD', currency: 'CAD' });
  const standalone = (await api.request('POST', '/payment_methods', { version: 'v2', json: { type: 'bank_account', bank_account: noCurrency } })).body;
  t.match(standalone, { bank_account: { account_currency: 'USD' }, status: 'active', verification_status: 'verified' });
  const refused = (await api.request('POST', '/payment_methods', { json: { type: 'bank_account', bank_account: { ...BANK, account_number: '000123456' } } })).body;
  t.equal(refused.verification_status, 'failed', 'an account the sandbox bank will refuse');
  const bad = await api.request('POST', '/payment_methods', { json: { type: 'bank_account', bank_account: { ...BANK, account_currency: 'EUR' } } });
  t.equal(bad.status, 400);
  const card = (await api.request('POST', '/payment_methods', { json: { type: 'card', card: CARD } })).body;
  t.notOk('verification_status' in card, 'a card has no bank verification');
});

t.test('a refund shows its ledger by default in v2 too', async (t) => {
  const paid = (await api.request('POST', '/transactions', { json: cardPayment('9.00') })).body;
  const refund = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'refund', amount: 2, transfers: [{ assoc_transaction_id: paid.id, amount: 2 }] } });
  t.equal(refund.status, 200, JSON.stringify(refund.body));
  parses(t, refund.body, struct({ ledger: vec(struct({ amount: 'f64', assoc_transaction_id: 'string', id: 'string' })) }), 'the v2 refund');
  t.same(refund.body.ledger.map((e: any) => e.assoc_transaction_id), [paid.id]);
  const read = await api.request('GET', `/transactions/${refund.body.id}`, { version: 'v2' });
  t.equal(read.body.ledger.length, 1);
  const payment = await api.request('GET', `/transactions/${paid.id}`);
  t.notOk('ledger' in payment.body, 'a payment keeps ledger a non-default field');
});

t.test('a zero-amount card verification moves no money; other zeros stay refused', async (t) => {
  const verify = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'payment', amount: 0, sender: { method: { type: 'card', card: CARD, keep_active: true } } } });
  t.equal(verify.status, 200, JSON.stringify(verify.body));
  t.match(verify.body, { amount: 0, status: { value: 'processed' } });
  t.notOk(verify.body.fee, 'no fee');
  const legs = await api.db('ledger_entries').where({ transaction_id: verify.body.id });
  t.equal(legs.length, 0, 'no ledger movement');
  const method = (await api.request('GET', `/payment_methods/${verify.body.sender.method_id}`)).body;
  t.equal(method.status, 'active', 'the card is stored for later');

  const declined = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 0, payment_method: { type: 'card', card: { ...CARD, card_number: '4111111111119903' }, keep_active: true } } });
  t.match(declined.body, { error_type: 'TransactionDeclined' }, 'the processor decides the verification');

  const refusals: Array<[string, unknown]> = [
    ['a card not asked to be kept', { type: 'card', card: CARD }],
    ['a card with keep_active: false', { type: 'card', card: CARD, keep_active: false }],
    ['a bank account', { type: 'bank_account', bank_account: BANK, keep_active: true }],
  ];
  for (const [what, payment_method] of refusals) {
    const res = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 0, payment_method } });
    t.equal(res.status, 400, what);
    t.match(res.body.details, { amount: 'Must be greater than 0' }, what);
  }
  const authorized = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 0, status: 'authorized', payment_method: { type: 'card', card: CARD, keep_active: true } } });
  t.equal(authorized.status, 400, 'a verification is not held for capture');
  const refund = await api.request('POST', '/transactions', { json: { type: 'refund', amount: 0, ledger: [{ assoc_transaction_id: verify.body.id }] } });
  t.equal(refund.status, 400, 'nothing to refund');
});

t.test('the OpenAPI document describes every field the connector relies on', async (t) => {
  const props = (doc: any, schema: string) => doc.components.schemas[schema]?.properties ?? {};
  for (const version of ['v1', 'v2']) {
    const doc = (await api.request('GET', `/openapi.json?version=${version}`, { key: null })).body;
    const accounts = version === 'v1' ? 'Customers' : 'Accounts';
    t.ok(props(doc, `${accounts}Create`).keep_active, `${version}: keep_active on ${accounts}`);
    t.ok(props(doc, 'TransactionsCreate').descriptor?.type.includes('string'), `${version}: descriptor`);
    t.equal(props(doc, 'TransactionsCreate').descriptor?.maxLength, 32);
    t.equal(props(doc, 'TransactionsCreate').amount?.minimum, 0, `${version}: a zero amount is described`);
    const methods = props(doc, 'PaymentMethods');
    t.ok(methods.status && methods.verification_status && methods.keep_active, `${version}: status, verification_status, keep_active of payment methods`);
    t.ok(methods.bank_account?.properties?.account_currency, `${version}: account_currency`);
    t.ok(props(doc, 'Transactions').ledger, `${version}: a refund's ledger`);
  }
});

t.test('a method stored before status existed answers one: kept, and a bank account not-verified', async (t) => {
  const bank = (await api.request('POST', '/payment_methods', { json: { type: 'bank_account', bank_account: BANK } })).body;
  const card = (await api.request('POST', '/payment_methods', { json: { type: 'card', card: CARD, keep_active: false } })).body;
  await api.db.raw(`update payment_methods set data = data - 'status' - 'verification_status' where id = any(?)`, [[bank.id, card.id]]);
  const read = await api.request('GET', `/payment_methods/${bank.id}`);
  parses(t, read.body, PAYMENT_METHOD_RESPONSE, 'the older bank method');
  t.match(read.body, { status: 'active', verification_status: 'not-verified' });
  t.equal((await api.request('GET', `/payment_methods/${card.id}`)).body.status, 'inactive', 'keep_active: false still reads inactive');
  const reused = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 1, payment_method_id: card.id } });
  t.equal(reused.status, 400, 'and is refused as one');
});
