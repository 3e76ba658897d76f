/**
 * The processor is asked outside any database transaction, for every way a card payment is made:
 * the one-statement payment, a split, a reverse-flow part, a client token's payment, a list of
 * payments, an invoice payment and the billing run's automatic payment. The test's processor looks
 * at the database each time it is asked: no connection of the service may be holding a
 * transaction open while it waits for the answer, and nothing may have been written for the
 * payment before it, not even by a transaction rolled back since (the create plans, the processor
 * answers, then the create writes once). The processor's answer is what is stored.
 */
import t from 'tap';
import { loadConfig } from '../api/config.ts';
import { createDomainServices } from '../api/domain.ts';
import { runBillingDay } from '../api/families/billing_schedules/run.ts';
import type { CardAuthorization, PaymentProcessor } from '../api/processor.ts';
import { startTestApi } from './helpers/api.ts';

const DECLINED = '4000000000000002';

interface Asked {
  number: string;
  openTransactions: number;
  /** rows inserted, updated or deleted since the request began, committed or rolled back */
  written: number;
}

const asked: Asked[] = [];
let db: import('../api/db/connection.ts').Db | null = null;
let writesAtStart = 0;

/**
 * Every row written to a table, counted by a sequence: a sequence's value survives its transaction's
 * rollback. The card-testing limit's claim is not the payment's: it is taken before the create, on purpose.
 */
async function countWrites(db: import('../api/db/connection.ts').Db): Promise<void> {
  await db.raw(`
    create sequence test_row_writes;
    create function count_test_row_write() returns trigger language plpgsql as $$
    begin perform nextval('test_row_writes'); return null; end $$;
    do $$ declare t record; begin
      for t in select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
                where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition and c.relname <> 'payment_attempt_limits' loop
        execute format('create trigger count_test_row_write after insert or update or delete on %I for each row execute function count_test_row_write()', t.relname);
      end loop;
    end $$;`);
}

async function writesSoFar(): Promise<number> {
  const { rows } = await db!.raw('select last_value::int as n, is_called from test_row_writes');
  return rows[0].is_called ? rows[0].n : 0;
}

/** Approves every card but DECLINED; notes how many of the service's connections hold a transaction open, and what was written. */
const watchingProcessor: PaymentProcessor = {
  async authorizeCard(number: string): Promise<CardAuthorization> {
    const [row] = await db!.raw(`select count(*)::int as n from pg_stat_activity
                                   where datname = current_database() and pid <> pg_backend_pid() and state like 'idle in transaction%'`).then((r: { rows: Array<{ n: number }> }) => r.rows);
    asked.push({ number, openTransactions: row.n, written: (await writesSoFar()) - writesAtStart });
    return number === DECLINED
      ? { approved: false, statusCode: 'card_declined', message: 'Declined by the test processor' }
      : { approved: true, statusCode: 'approved', message: 'Approved' };
  },
  voidAuthorization: async () => {},
  bankWillReject: () => false,
};

const api = await startTestApi(t, {}, { processor: watchingProcessor });
db = api.db;
const card = (number: string) => ({ type: 'card', card: { card_number: number, expiry: '12/35', card_code: '123' } });
const shop = (await api.request('POST', '/processing_accounts', { json: { name: 'Shop' } })).body;
const branch = (await api.request('POST', '/processing_accounts', { json: { name: 'Branch' } })).body;
const payer = (await api.request('POST', '/customers', { json: { name: 'Payer', email: 'payer@example.com' } })).body;
const saved = (await api.request('POST', '/payment_methods', { json: { ...card('4242424242424242'), customer_id: payer.id } })).body;
await countWrites(api.db);

/** Runs `make` and answers what the processor was asked during it. */
async function asking(make: () => Promise<unknown>): Promise<Asked[]> {
  const from = asked.length;
  writesAtStart = await writesSoFar();
  await make();
  return asked.slice(from);
}

t.test('the one-statement payment asks the processor with no transaction open', async (t) => {
  let res: any;
  const questions = await asking(async () => {
    res = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 5, processing_id: shop.id, payment_method: card('4111111111111111') } });
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.same(questions, [{ number: '4111111111111111', openTransactions: 0, written: 0 }]);
});

t.test('a split payment (the generic pipeline) is decided outside its transaction, and declined by the answer', async (t) => {
  let approved: any;
  let declined: any;
  const questions = await asking(async () => {
    approved = await api.request('POST', '/transactions', {
      version: 'v2',
      json: { type: 'payment', amount: 10, sender: { account_id: payer.id, method_id: saved.id }, receiver: { account_id: shop.id }, transfers: [{ amount: 4, receiver: { account_id: branch.id } }] },
    });
  });
  questions.push(...await asking(async () => {
    declined = await api.request('POST', '/transactions', {
      version: 'v2',
      json: { type: 'payment', amount: 10, sender: { method: card(DECLINED) }, receiver: { account_id: shop.id }, transfers: [{ amount: 4, receiver: { account_id: branch.id } }] },
    });
  }));
  t.equal(approved.status, 200, JSON.stringify(approved.body));
  t.equal(approved.body.status.value, 'processed');
  t.equal(declined.status, 400, JSON.stringify(declined.body));
  t.equal(declined.body.details.status.code, 'card_declined', 'the answer the processor gave is the one stored');
  t.same(questions.map((q) => q.number), ['4242424242424242', DECLINED], 'each card asked once');
  t.ok(questions.every((q) => q.openTransactions === 0 && q.written === 0), JSON.stringify(questions));
  const stored = await api.db('transactions').where({ id: declined.body.details.id }).first();
  t.equal(stored.data.status, 'declined');
  t.equal(Number((await api.db('transfers').where({ transaction_id: approved.body.id }).count('* as n'))[0].n), 1, 'the split is written once');
});

t.test('a reverse-flow payment asks about each sender\'s card once, outside the transaction', async (t) => {
  let res: any;
  const questions = await asking(async () => {
    res = await api.request('POST', '/transactions', {
      version: 'v2',
      json: { type: 'payment', receiver: { account_id: shop.id }, transfers: [{ amount: 3, sender: { account_id: payer.id, method_id: saved.id } }, { amount: 2, sender: { account_id: payer.id, method_id: saved.id } }] },
    });
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.equal(res.body.amount, 5);
  t.same(questions, [{ number: '4242424242424242', openTransactions: 0, written: 0 }, { number: '4242424242424242', openTransactions: 0, written: 0 }], 'each part asked once, the whole not again');
});

t.test('a client token\'s payment is decided outside the transaction that spends the token', async (t) => {
  const token = (await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { payment_form: { payment: { amount: 7, processing_id: shop.id } } } } })).body.id;
  let res: any;
  const questions = await asking(async () => {
    res = await api.request('POST', '/transactions', { key: token, json: { type: 'payment', payment_method: card('5555555555554444') } });
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.same(questions, [{ number: '5555555555554444', openTransactions: 0, written: 0 }]);
  const again = await api.request('POST', '/transactions', { key: token, json: { type: 'payment', payment_method: card('5555555555554444') } });
  t.equal(again.status, 403, 'the token was spent once, by the payment that committed');
});

t.test('a card typed into a payment that becomes the payer\'s default is written, with its default, after the processor answers', async (t) => {
  const holder = (await api.request('POST', '/customers', { json: { name: 'Holder' } })).body;
  let res: any;
  const questions = await asking(async () => {
    res = await api.request('POST', '/transactions', {
      version: 'v2',
      json: { type: 'payment', amount: 6, sender: { account_id: holder.id, method: { ...card('4000056655665556'), account_defaults: { paying: 'all' } } }, receiver: { account_id: shop.id } },
    });
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.same(questions, [{ number: '4000056655665556', openTransactions: 0, written: 0 }]);
  const method = (await api.request('GET', `/payment_methods/${res.body.sender.method_id}`, { version: 'v2' })).body;
  t.equal(method.account_defaults.paying, 'all', 'the method\'s own rules ran with its write');
});

t.test('a list of card payments is decided card by card, outside the one transaction, and answered in order', async (t) => {
  let res: any;
  const questions = await asking(async () => {
    res = await api.request('POST', '/transactions', {
      json: { object: 'list', values: [
        { type: 'payment', amount: 1, processing_id: shop.id, payment_method: card('4111111111111111') },
        { type: 'payment', amount: 2, processing_id: shop.id, payment_method: card('4012888888881881') },
      ] },
    });
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.same(res.body.values.map((v: any) => [v.amount, v.status]), [[1, 'processed'], [2, 'processed']]);
  t.same(questions, [{ number: '4111111111111111', openTransactions: 0, written: 0 }, { number: '4012888888881881', openTransactions: 0, written: 0 }]);
});

t.test('a payment of an invoice is decided outside the transaction that allocates it', async (t) => {
  const invoice = (await api.request('POST', '/invoices', {
    json: { customer_id: payer.id, processing_id: shop.id, due_date: '2030-01-01', items: [{ type: 'charge', amount: 12, description: 'Work' }] },
  })).body;
  t.ok(invoice.id, JSON.stringify(invoice));
  let res: any;
  const questions = await asking(async () => {
    res = await api.request('POST', '/transactions', {
      json: { type: 'payment', amount: 12, customer_id: payer.id, payment_method_id: saved.id, allocations: [{ entry_type: 'payment', invoice_id: invoice.id }] },
    });
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.same(questions, [{ number: '4242424242424242', openTransactions: 0, written: 0 }]);
  const paid = (await api.request('GET', `/invoices/${invoice.id}`)).body;
  t.equal(paid.status, 'paid', JSON.stringify(paid));
});

t.test('the billing run\'s automatic payment is decided outside the transaction that pays the invoice', async (t) => {
  const subscriber = (await api.request('POST', '/customers', { json: { name: 'Subscriber' } })).body;
  const method = await api.request('POST', '/payment_methods', {
    version: 'v2', json: { type: 'card', account_id: subscriber.id, card: { card_number: DECLINED, expiry: '12/35' }, account_defaults: { paying: 'all' } },
  });
  t.equal(method.status, 200, JSON.stringify(method.body));
  const today = new Date().toISOString().slice(0, 10);
  const invoice = (await api.request('POST', '/invoices', { json: { customer_id: subscriber.id, processing_id: shop.id, due_date: today, items: [{ amount: 9 }] } })).body;
  const domain = createDomainServices(loadConfig({ DATABASE_URL: api.databaseUrl }), { processor: watchingProcessor });
  const orgId = (await api.db('orgs').where({ name: 'acme' }).first()).id;
  let payments: string[] = [];
  const questions = await asking(async () => {
    payments = (await runBillingDay(api.db, domain, { orgId, environment: 'test' }, new Date())).payments;
  });
  t.same(questions, [{ number: DECLINED, openTransactions: 0, written: 0 }]);
  t.equal(payments.length, 1);
  const stored = await api.db('transactions').where({ id: payments[0] }).first();
  t.equal(stored.data.status, 'declined', 'the processor\'s decline is what the run stored');
  t.equal((await api.request('GET', `/invoices/${invoice.id}`)).body.status, 'unpaid');
});
