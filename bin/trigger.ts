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

const RECIPES: Record<string, (call: Call) => Promise<Fired['ids'] | [Fired['ids'], string]>> = {
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
  reversal: async (call) => ({ transaction: (await call('POST', '/transactions', { type: 'reversal', amount: 10, payment_method: BANK })).id }),
  deposit: async (call) => ({ transaction: (await call('POST', '/transactions', { type: 'deposit', amount: 10, payment_method: BANK })).id }),
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

/** Triggers whose objects this service does not make yet: said plainly, never faked. */
const NOT_YET: Record<string, string> = {
  chargeback: 'chargebacks arrive with funding and the ledger (not built yet)',
  chargeback_reversal: 'chargebacks arrive with funding and the ledger (not built yet)',
  'transaction:operation': 'transaction operations arrive with funding and the ledger (not built yet)',
  'transaction:operation:clear': 'transaction operations arrive with funding and the ledger (not built yet)',
  'payment_activation:status': 'a payment activation changes status when its enrollment page is completed in a browser',
};

export const FIREABLE_TRIGGERS = Object.keys(RECIPES);

export async function fireTrigger(target: TriggerTarget, trigger: string): Promise<Fired> {
  const recipe = RECIPES[trigger];
  if (!recipe) throw new Error(NOT_YET[trigger] ? `${trigger}: ${NOT_YET[trigger]}` : `unknown trigger ${trigger}; one of: ${FIREABLE_TRIGGERS.join(', ')}`);
  if (!target.key.startsWith('test_')) throw new Error('settle trigger runs in the test environment only: give a test secret key');
  const made = await recipe(caller(target));
  const [ids, note] = Array.isArray(made) ? made : [made, undefined];
  return { trigger, ids, ...(note && { note }) };
}
