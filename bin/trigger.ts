/**
 * `settle trigger <trigger>`: makes, through the public API of a running Settle and in the test
 * environment, what it takes for one webhook trigger to fire, and returns the ids it made. Each
 * recipe is the shortest real path to its event (no event is written directly), so a webhook
 * receiver sees exactly what production would send.
 */
export interface TriggerTarget {
  url: string;
  key: string;
}

export interface Fired {
  trigger: string;
  /** what was made, by kind */
  ids: Record<string, string>;
  /** set when the event comes a moment later, from the worker */
  note?: string;
}

type Call = (method: string, path: string, body?: unknown, version?: 'v1' | 'v2') => Promise<Record<string, any>>;

const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };
const BANK = { type: 'bank_account', bank_account: { account_number: '123456789', routing_number: '036001808', account_type: 'checking' } };
const DISPUTED = { type: 'card', card: { card_number: '4000 0000 0000 0259', expiry: '12/35', card_code: '123' } };
const REVERSED = { type: 'card', card: { card_number: '4000 0000 0000 2685', expiry: '12/35', card_code: '123' } };
const REJECTED_BANK = { type: 'bank_account', bank_account: { account_number: '000123456', routing_number: '036001808', account_type: 'checking' } };

function caller(target: TriggerTarget): Call {
  const auth = `Basic ${Buffer.from(`${target.key}:`).toString('base64')}`;
  return async (method, path, body, version = 'v1') => {
    const response = await fetch(target.url + path, {
      method,
      headers: { Authorization: auth, 'Content-Type': 'application/json', 'X-API-Version': version },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = (await response.json()) as Record<string, any>;
    // A stored decline answers 400 with the stored transaction as its details: that is the point.
    if (response.status !== 200 && answer.error_type !== 'TransactionDeclined') {
      throw new Error(`${method} ${path} answered ${response.status}: ${answer.error_description ?? JSON.stringify(answer)}`);
    }
    return answer;
  };
}

async function payment(call: Call, extra: Record<string, unknown> = {}): Promise<Record<string, any>> {
  return call('POST', '/transactions', { type: 'payment', amount: 10, payment_method: CARD, description: 'settle trigger', ...extra });
}

/** A payment to a shop funded at once (delay 0), then the test clock moved a day: the funding run clears and deposits it. */
async function fundedPayment(call: Call): Promise<Fired['ids']> {
  const shop = await call('POST', '/processing_accounts', { name: 'Trigger test shop', funding_delay: 0, payment_methods: [BANK] });
  const paid = await payment(call, { processing_id: shop.id });
  const clock = await call('GET', '/test_clock');
  const later = new Date(Math.max(Date.parse(`${String(clock.now).replace(' ', 'T')}Z`), Date.now()) + 86_400_000);
  await call('PUT', '/test_clock', { now: later.toISOString().slice(0, 19).replace('T', ' ') });
  const deposits = await call('GET', `/transactions?type=deposit&processing_id=${shop.id}`);
  return { processing_account: shop.id, transaction: paid.id, deposit: deposits.values[0]?.id };
}

const RECIPES: Record<string, (call: Call, url: string) => Promise<Fired['ids'] | [Fired['ids'], string]>> = {
  processing_status: async (call) => ({ processing_account: (await call('POST', '/processing_accounts', { name: 'Trigger test shop' })).id }),
  payment: async (call) => ({ transaction: (await payment(call)).id }),
  processed: async (call) => ({ transaction: (await payment(call)).id }),
  authorized: async (call) => ({ transaction: (await call('POST', '/transactions', { type: 'payment', amount: 10, status: { value: 'authorized' }, sender: { method: CARD } }, 'v2')).id }),
  decline: async (call) => {
    const answer = await payment(call, { payment_method: { type: 'card', card: { card_number: '4111 1111 1111 9903', expiry: '12/35' } } });
    return { transaction: answer.details?.id ?? answer.id };
  },
  void: async (call) => {
    const paid = await payment(call);
    await call('PUT', `/transactions/${paid.id}`, { status: 'voided' });
    return { transaction: paid.id };
  },
  refund: async (call) => {
    const paid = await payment(call);
    const refund = await call('POST', '/transactions', { type: 'refund', amount: 10, ledger: [{ assoc_transaction_id: paid.id }] });
    return { payment: paid.id, refund: refund.id };
  },
  credit: async (call) => {
    const customer = await call('POST', '/customers', { name: 'Trigger payee' });
    return { customer: customer.id, transaction: (await call('POST', '/transactions', { type: 'credit', amount: 10, customer_id: customer.id, payment_method: BANK })).id };
  },
  reversal: async (call) => {
    const shop = await call('POST', '/processing_accounts', { name: 'Trigger test shop', payment_methods: [BANK] });
    return { processing_account: shop.id, transaction: (await call('POST', '/transactions', { type: 'reversal', amount: 10, processing_id: shop.id })).id };
  },
  deposit: fundedPayment,
  'transaction:operation': async (call) => ({ transaction: (await payment(call)).id }),
  'transaction:operation:clear': fundedPayment,
  chargeback: async (call) => [{ transaction: (await payment(call, { payment_method: DISPUTED })).id }, 'the card network charges it back about a second after processing'],
  chargeback_reversal: async (call) => [{ transaction: (await payment(call, { payment_method: REVERSED })).id }, 'charged back about a second after processing, reversed a second later'],
  reject: async (call) => [{ transaction: (await payment(call, { payment_method: REJECTED_BANK })).id }, 'the bank rejects it about a second after processing'],
  bank_account_reject: async (call) => [{ transaction: (await payment(call, { payment_method: REJECTED_BANK })).id }, 'the bank rejects it about a second after processing'],
  transfer: async (call) => {
    const vendor = await call('POST', '/processing_accounts', { name: 'Trigger test vendor' });
    const paid = await call('POST', '/transactions', { type: 'payment', amount: 10, sender: { method: CARD }, transfers: [{ receiver: { account_id: vendor.id }, amount: 4 }] }, 'v2');
    return { vendor: vendor.id, transaction: paid.id };
  },
  'payment_link:status': async (call) => {
    const link = await call('POST', '/payment_links', { type: 'one_time', description: 'settle trigger', amount: 10 });
    await call('PUT', `/payment_links/${link.id}`, { status: 'inactive' });
    return { payment_link: link.id };
  },
  // A webhook disabled, enabled and disabled again (left so: it sends nothing); each change goes to the org's other webhooks.
  'webhook:status': async (call) => {
    const webhook = await call('POST', '/webhooks', { trigger: 'payment', url: 'https://example.com/settle-trigger' });
    await call('PUT', `/webhooks/${webhook.id}`, { status: 'disabled' });
    await call('PUT', `/webhooks/${webhook.id}`, { status: 'active' });
    await call('PUT', `/webhooks/${webhook.id}`, { status: 'disabled' });
    return { webhook: webhook.id };
  },
  // The enrollment page is a public page (its id is the capability): the form is posted as a browser would.
  'payment_activation:status': async (call, url) => {
    const activation = await call('POST', '/payment_activations', { intent: { entity_name: 'Trigger test payee' } });
    const form = new URLSearchParams({ name: 'Trigger test payee', routing_number: '036001808', account_number: '987654321' });
    const page = await fetch(`${url}/enroll/${activation.id}`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: form });
    if (page.status !== 200) throw new Error(`the enrollment page answered ${page.status}`);
    return { payment_activation: activation.id };
  },
  'entity:status': async (call) => {
    // An entity is verified once an account uses it: pending at once, decided a moment later.
    const entity = { type: 'business', legal_name: 'Trigger Test LLC', country: 'US', tax_id: { value: '123456789' } };
    const account = await call('POST', '/accounts', { type: 'processing', name: 'Trigger test shop', entity }, 'v2');
    return [{ processing_account: account.id, entity: account.entity?.id ?? account.entity_id }, 'verification decides its status a moment later'];
  },
  // An element intent finishes when its client token pays, as a browser would with it.
  'intent:status': async (call, url) => {
    const intent = await call('POST', '/intents', { type: 'payment_form', payment_form: { payment: { amount: 10, description: 'settle trigger' } } }, 'v2');
    const paid = await fetch(`${url}/transactions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${intent.client_token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ type: 'payment', amount: 10, payment_method: CARD }),
    });
    if (paid.status !== 200) throw new Error(`the intent's payment answered ${paid.status}`);
    return { intent: intent.id, transaction: ((await paid.json()) as { id: string }).id };
  },
  automatic_payment: async (call) => {
    const customer = await call('POST', '/customers', { name: 'Trigger subscriber', email: 'subscriber@example.com' });
    const method = await call('POST', '/payment_methods', { ...CARD, account_id: customer.id, account_defaults: { paying: 'all' } }, 'v2');
    const today = new Date().toISOString().slice(0, 10);
    const invoice = await call('POST', '/invoices', { customer_id: customer.id, due_date: today, items: [{ entry_type: 'charge', amount: 10 }] });
    const clock = await call('GET', '/test_clock');
    const later = new Date(Math.max(Date.parse(`${String(clock.now).replace(' ', 'T')}Z`), Date.now()) + 60_000);
    await call('PUT', '/test_clock', { now: later.toISOString().slice(0, 19).replace('T', ' ') });
    return { customer: customer.id, payment_method: method.id, invoice: invoice.id };
  },
};


export const FIREABLE_TRIGGERS = Object.keys(RECIPES);

export async function fireTrigger(target: TriggerTarget, trigger: string): Promise<Fired> {
  const recipe = RECIPES[trigger];
  if (!recipe) throw new Error(`unknown trigger ${trigger}; one of: ${FIREABLE_TRIGGERS.join(', ')}`);
  if (!target.key.startsWith('test_')) throw new Error('settle trigger runs in the test environment only: give a test secret key');
  const made = await recipe(caller(target), target.url);
  const [ids, note] = Array.isArray(made) ? made : [made, undefined];
  return { trigger, ids, ...(note && { note }) };
}
