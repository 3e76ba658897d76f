/**
 * `DELETE /test_data`: a test secret key empties its org's test environment (every object and
 * what it left behind, counted by collection), keeps the org's keys and webhooks, and starts the
 * environment again with a default processing account. The live environment and other orgs are
 * never touched, and requests of the environment never overlap a reset: each runs wholly before
 * it (and is deleted) or wholly after it (and sees the empty environment).
 */
import t from 'tap';
import type { Db } from '../api/db/connection.ts';
import { KEPT_TABLES, RESET_TABLES } from '../api/db/testData.ts';
import { collections } from '../api/families/index.ts';
import { startTestApi, startTestWorker, type ApiResponse } from './helpers/api.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };
const DUE = '2026-11-23';

const api = await startTestApi(t);
const acme = { test: api.key, live: await api.newKey('acme', 'live') };
const globex = await api.newKey('globex', 'test');
const orgs = Object.fromEntries((await api.db('orgs').select('id', 'name')).map((o: { id: string; name: string }) => [o.name, o.id]));

function requestAs(key: string) {
  return async (method: string, path: string, json?: unknown, options: { version?: string; headers?: Record<string, string> } = {}): Promise<ApiResponse> =>
    api.request(method, path, { key, json, ...options });
}

async function ok(response: Promise<ApiResponse>): Promise<any> {
  const res = await response;
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** What a client of the environment makes in a day: accounts, cards, payments, a refund, an invoice paid through a link, … */
async function populate(key: string, receiver: Receiver, label: string): Promise<void> {
  const as = requestAs(key);
  const post = (path: string, json: unknown, options: { version?: string; headers?: Record<string, string> } = {}) => ok(as('POST', path, json, options));
  await post('/webhooks', { trigger: 'payment', url: `${receiver.url}/${label}` });
  const shop = await post('/processing_accounts', { name: `${label} Shop` });
  const ann = await post('/customers', { name: 'Ann', email: `ann@${label}.example` });
  const bob = await post('/customers', { name: 'Bob', email: `bob@${label}.example` });
  const card = await post('/payment_methods', { ...CARD, customer_id: ann.id });
  const paid = await post('/transactions', { type: 'payment', amount: 10, customer_id: ann.id, payment_method: CARD });
  await post('/transactions', { type: 'payment', amount: 20, customer_id: bob.id, processing_id: shop.id, payment_method: CARD },
    { headers: { 'Idempotency-Key': `${label}-bob-20` } });
  await post('/transactions', { type: 'payment', amount: 30, customer_id: ann.id, payment_method_id: card.id });
  await post('/transactions', { type: 'refund', amount: 5, ledger: [{ assoc_transaction_id: paid.id }] });
  const invoice = await post('/invoices', { due_date: DUE, customer_id: bob.id, items: [{ amount: 12.34 }] });
  const link = await post('/payment_links', { type: 'one_time', invoice_id: invoice.id });
  await post('/transactions', { type: 'payment', payment_link_id: link.id, payment_method: CARD });
  await post('/payment_links', { type: 'reusable', description: 'Dues' });
  await post('/billing_schedules', {
    start_date: '2019-01-01', end_date: '2019-12-31', recurring_frequency: 'monthly', type: 'subscription',
    customer_id: ann.id, processing_id: shop.id, charges: { type: 'option_1', amount: 5 },
  });
  await post('/entities', {
    type: 'business', legal_name: `${label} LLC`, country: 'US',
    business: { structure: 'llc', stakeholders: [{ personal_information: { full_name: 'Olive Owner', email: `olive@${label}.example` } }] },
  }, { version: 'v2' });
  await post('/intents', { type: 'payment_form', payment_form: { payment: { amount: 12.5, description: 'Tea' } } }, { version: 'v2' });
  await post('/payment_activations', { intent: { entity_name: 'Boba' }, send_to: [{ name: 'Boba', email: `boba@${label}.example` }] });
  const token = await post('/access_tokens', { type: 'client', intent: { payment_form: { payment: { amount: 7, customer_id: ann.id } } } });
  await ok(api.request('POST', '/transactions', { key: token.id, json: { type: 'payment', payment_method: CARD } }));
}

/** Every collection of the registry as the key lists it, and the org's keys. */
async function lists(key: string): Promise<Record<string, unknown>> {
  const as = requestAs(key);
  const seen: Record<string, unknown> = {};
  for (const { path } of collections) {
    for (const version of ['v1', 'v2']) {
      const res = await as('GET', `/${path}?limit=10000`, undefined, { version });
      seen[`${version} /${path}`] = res.status === 200 ? res.body.values : res.status;
    }
  }
  seen['/users'] = (await as('GET', '/users')).body;
  return seen;
}

/** Every table's rows of one tenant (the tables that have a tenant), by table. */
async function storedRows(db: Db, orgId: string, environment: string): Promise<Record<string, number>> {
  const tables = (await db.raw(
    `select c.table_name from information_schema.columns c join information_schema.tables t using (table_schema, table_name)
      where c.table_schema = 'public' and c.column_name = 'environment' and t.table_type = 'BASE TABLE' order by 1`)).rows;
  const counts: Record<string, number> = {};
  for (const { table_name: table } of tables) {
    const [row] = (await db.raw(`select count(*)::int as n from ${table} where org_id = ? and environment = ?`, [orgId, environment])).rows;
    counts[table] = row.n;
  }
  return counts;
}

/** Jobs queued about a tenant's objects, as a reset finds them. */
async function queuedJobs(db: Db, orgId: string, environment: string): Promise<number> {
  const [row] = (await db.raw(
    `select count(*)::int as n from graphile_worker._private_jobs j
      where (j.payload->>'org_id' = ? and j.payload->>'environment' = ?)
         or exists (select 1 from transactions x where x.id = j.payload->>'transaction_id' and x.org_id = ? and x.environment = ?)`,
    [orgId, environment, orgId, environment])).rows;
  return row.n;
}

/** Every webhook here takes `payment` events: each has its delivery once dispatched, and it is done once nothing is pending. */
async function deliveries(): Promise<{ events: number; deliveries: number; pending: number }> {
  const [row] = (await api.db.raw(
    `select (select count(*)::int from events where trigger = 'payment') as events, (select count(*)::int from webhook_deliveries) as deliveries,
            (select count(*)::int from webhook_deliveries where state = 'pending') as pending`)).rows;
  return row;
}

/** The other environments as the reset found them: their lists and stored rows. */
const untouched: Record<'acmeLive' | 'globex', { lists: Record<string, unknown>; stored: Record<string, number> }> = {
  acmeLive: { lists: {}, stored: {} }, globex: { lists: {}, stored: {} },
};

t.test('a day of objects in three environments: acme test and live, globex test', async (t) => {
  const receiver = await startReceiver(t);
  // The worker delivers this test's webhooks, then stops with it: the reset below runs against a quiet queue.
  await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50' });
  await populate(acme.test, receiver, 'acme-test');
  await populate(acme.live, receiver, 'acme-live');
  await populate(globex, receiver, 'globex-test');
  // A v1 key that authorizes only: its payment waits for capture, with its expiry job queued.
  const authorizing = await api.newKey('acme', 'test', { authorize_and_capture: true });
  const customer = await ok(requestAs(authorizing)('POST', '/customers', { name: 'Carl' }));
  const authorized = await ok(requestAs(authorizing)('POST', '/transactions', { type: 'payment', amount: 8, customer_id: customer.id, payment_method: CARD }));
  t.equal(authorized.status, 'authorized');
  // The test environment's clock, moved a day on (a setting of the environment that a reset takes back to real time).
  await ok(requestAs(acme.test)('PUT', '/test_clock', { now: new Date(Date.now() + 86_400_000).toISOString() }));
  const done = await eventually(deliveries, (n) => n.deliveries === n.events && n.pending === 0);
  t.same([done.deliveries, done.pending], [done.events, 0], `every payment event delivered (${receiver.received.length} received)`);
});

t.test('a test secret key empties its test environment and counts what it deleted', async (t) => {
  const listed = (path: string, version = 'v1') => ok(api.request('GET', `/${path}?limit=10000`, { version })).then((b) => b.values.length);
  const before = {
    customers: await listed('customers'), processing_accounts: await listed('processing_accounts'), entities: await listed('entities', 'v2'),
    stakeholders: await listed('stakeholders', 'v2'), payment_methods: await listed('payment_methods'), transactions: await listed('transactions'),
    transfers: await listed('transfers', 'v2'), transaction_operations: await listed('transaction_operations', 'v2'), invoices: await listed('invoices'),
    invoice_items: await listed('invoice_items', 'v2'), payment_allocations: await listed('payment_allocations', 'v2'),
    payment_links: await listed('payment_links'), billing_schedules: await listed('billing_schedules'), billing_charges: await listed('billing_charges'),
    intents: await listed('intents', 'v2'), payment_activations: await listed('payment_activations', 'v2'), webhook_logs: await listed('webhook_logs'),
  };
  const stored = await storedRows(api.db, orgs.acme, 'test');
  const jobs = await queuedJobs(api.db, orgs.acme, 'test');
  untouched.acmeLive = { lists: await lists(acme.live), stored: await storedRows(api.db, orgs.acme, 'live') };
  untouched.globex = { lists: await lists(globex), stored: await storedRows(api.db, orgs.globex, 'test') };
  const webhooks = (await ok(api.request('GET', '/webhooks'))).values;

  const res = await api.request('DELETE', '/test_data');
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.equal(res.body.object, 'test_data_reset');
  const deleted = res.body.deleted;
  const counted = (names: string[]) => Object.fromEntries(names.map((name) => [name, deleted[name]]));
  t.same(counted(Object.keys(before)), before, 'each collection: as many deleted as its list showed');
  const traces = {
    ledger_entries: stored.ledger_entries, events: stored.events, webhook_deliveries: stored.webhook_deliveries, link_emails: stored.link_emails,
    idempotency_keys: stored.idempotency_keys, client_tokens: stored.access_tokens, test_clocks: stored.test_clocks, jobs,
  };
  t.same(counted(Object.keys(traces)), traces, 'and every trace they left behind');
  for (const name of ['customers', 'processing_accounts', 'entities', 'stakeholders', 'payment_methods', 'transactions', 'transfers',
    'transaction_operations', 'ledger_entries', 'invoices', 'invoice_items', 'payment_allocations', 'payment_links', 'billing_schedules',
    'billing_charges', 'intents', 'payment_activations', 'events', 'webhook_deliveries', 'webhook_logs', 'link_emails', 'idempotency_keys', 'client_tokens',
    'test_clocks', 'jobs']) {
    t.ok(deleted[name] > 0, `${name}: ${deleted[name]} deleted`);
  }

  const after = await lists(acme.test);
  const processing = after['v1 /processing_accounts'] as any[];
  t.same(processing.map((p) => [p.id, p.name, p.status]), [[res.body.default_processing_account_id, 'acme', 'active']],
    'one processing account: the new default, as a new org starts with');
  for (const [list, values] of Object.entries(after)) {
    if (!Array.isArray(values) || /\/audit_events$/.test(list)) continue;
    const expected = /\/(processing_accounts|accounts|processing_settings|profiles)$/.test(list) ? 1 : /\/webhooks$/.test(list) ? webhooks.length : 0;
    t.equal(values.length, expected, `${list}: ${expected}`);
  }
  t.same((await ok(api.request('GET', '/webhooks'))).values, webhooks, 'webhooks stay as they were');
  const left = await storedRows(api.db, orgs.acme, 'test');
  t.ok(deleted.audit_events >= stored.audit_events, `the audit history went too (${deleted.audit_events} events)`);
  t.same(left, {
    ...Object.fromEntries(Object.keys(stored).map((k) => [k, 0])),
    accounts: 1, webhooks: webhooks.length, api_keys: stored.api_keys, reporting_changes: stored.reporting_changes, audit_events: 1, events: 1,
  }, 'no row of the environment is left in any table but the new account (and its creation\'s audit event and processing_status event), the webhooks, the keys and the feed\'s deletion marks');
  t.equal(await queuedJobs(api.db, orgs.acme, 'test'), 0, 'no job about a deleted object is queued');
  const feed = (await api.db.raw(
    `select count(*) filter (where deleted)::int as deleted, count(*)::int as total from reporting_changes where org_id = ? and environment = 'test'`, [orgs.acme])).rows[0];
  t.same(feed, { deleted: deleted.transactions, total: deleted.transactions }, 'the reporting feed marks every transaction deleted, so the mirror drops it');

  const payment = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 3, customer_id: (await ok(api.request('POST', '/customers', { json: { name: 'New' } }))).id, payment_method: CARD } });
  t.equal(payment.status, 200, 'the key still works: a payment goes to the new default processing account');
  t.equal(payment.body.processing_id, res.body.default_processing_account_id);
});

t.test('the live environment and the other org are exactly as they were', async (t) => {
  t.same(await lists(acme.live), untouched.acmeLive.lists, 'acme live: every list unchanged');
  t.same(await lists(globex), untouched.globex.lists, 'globex test: every list unchanged');
  t.same(await storedRows(api.db, orgs.acme, 'live'), untouched.acmeLive.stored, 'acme live: every table unchanged');
  t.same(await storedRows(api.db, orgs.globex, 'test'), untouched.globex.stored, 'globex test: every table unchanged');
});

t.test('a live secret key or a client token may not reset, and nothing is deleted', async (t) => {
  const token = await ok(api.request('POST', '/access_tokens', { json: { type: 'client', intent: { payment_form: { payment: { amount: 7 } } } } }));
  const liveBefore = await storedRows(api.db, orgs.acme, 'live');
  const testBefore = await storedRows(api.db, orgs.acme, 'test');
  const live = await api.request('DELETE', '/test_data', { key: acme.live });
  t.equal(live.status, 403);
  t.match(live.body, { object: 'error', error_type: 'Forbidden' });
  const client = await api.request('DELETE', '/test_data', { key: token.id });
  t.equal(client.status, 403);
  t.match(client.body, { object: 'error', error_type: 'Forbidden' });
  t.same(await storedRows(api.db, orgs.acme, 'live'), liveBefore, 'the live environment is untouched');
  t.same(await storedRows(api.db, orgs.acme, 'test'), testBefore, 'the test environment is untouched');
});

t.test('a second reset right after deletes only the default processing account the first one made (and makes another)', async (t) => {
  const first = await ok(api.request('DELETE', '/test_data'));
  const second = await ok(api.request('DELETE', '/test_data'));
  const zeros = Object.fromEntries(Object.keys(second.deleted).map((k) => [k, 0]));
  t.same(second.deleted, { ...zeros, processing_accounts: 1, audit_events: 1, events: 1 }, 'the account, its creation\'s audit event and its processing_status event');
  t.not(second.default_processing_account_id, first.default_processing_account_id, 'a new default each time');
  const processing = (await ok(api.request('GET', '/processing_accounts'))).values;
  t.same(processing.map((p: any) => p.id), [second.default_processing_account_id]);
});

t.test('the new default processing account is made by the account family\'s create, as the system: its audit event and its processing_status event', async (t) => {
  const reset = await ok(api.request('DELETE', '/test_data'));
  const id = reset.default_processing_account_id;
  t.match((await ok(api.request('GET', `/processing_accounts/${id}`))), { id, name: 'acme', status: 'active', funding_style: 'net', funding_delay: 2, keep_active: true });
  const [created] = (await ok(api.request('GET', `/audit_events?object_id=${id}`))).values;
  t.match(created, { action: 'create', object_type: 'account', actor: { type: 'system', name: 'default_processing_account' } });
  const events = await api.db('events').where({ object_id: id });
  t.match(events, [{ trigger: 'processing_status', object_type: 'processing_account', value: 'active' }]);
  t.match(events[0].id, /^evt_[0-9A-Za-z]{24}$/, 'an id of the one format, from the one event writer');
});

/** What a backend of the test's database is waiting for, by a fragment of its query. */
async function waitingOn(fragment: string): Promise<string[]> {
  const found = await api.db.raw(
    `select wait_event from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like ?`, [`%${fragment}%`]);
  return found.rows.map((r: { wait_event: string }) => r.wait_event);
}

/** `n` payments like `paymentId`, written by SQL with the table triggers on (ledger, operations, events, reporting feed). */
async function seedPayments(orgId: string, paymentId: string, n: number): Promise<void> {
  await api.db.raw(
    `with source as (select type, data from transactions where id = ?),
          made as (select 'txn_' || substr(md5(random()::text || g::text), 1, 24) as id from generate_series(1, ?) g)
     insert into transactions (id, org_id, environment, type, data)
     select m.id, ?, 'test', s.type, s.data from made m, source s`, [paymentId, n, orgId]);
}

t.test('a reset waits for a running request of its environment, whose write it then deletes', async (t) => {
  const customer = await ok(api.request('POST', '/customers', { json: { name: 'Dora' } }));
  // The test holds Dora's row: an update of her, once past the gate, waits here, still running.
  const pause = await api.db.transaction();
  await pause.raw('select 1 from accounts where id = ? for update', [customer.id]);
  const update = api.request('PUT', `/customers/${customer.id}`, { json: { name: 'Dora Renamed' } });
  const blocked = await eventually(() => waitingOn('from accounts'), (events) => events.length > 0);
  t.ok(blocked.length > 0, 'the update is running, waiting for the row');
  const reset = api.request('DELETE', '/test_data');
  const gated = await eventually(() => waitingOn('pg_advisory_xact_lock'), (events) => events.includes('advisory'));
  t.ok(gated.includes('advisory'), 'the reset waits for the running request, on the tenant lock');
  // A request arriving now joins the running requests (and the reset deletes what it did) or waits for the reset.
  const list = api.request('GET', '/customers');
  await pause.rollback();
  const [updated, answered, listed] = await Promise.all([update, reset, list]);
  t.equal(updated.status, 200, 'the running request finished');
  t.equal(updated.body.name, 'Dora Renamed');
  t.equal(answered.status, 200, JSON.stringify(answered.body));
  t.equal(answered.body.deleted.customers, 1, 'the reset deleted the customer the request had updated');
  t.same(await api.db('accounts').where({ id: customer.id }), [], 'gone');
  const names = listed.body.values.map((c: { name: string }) => c.name);
  t.ok(names.length === 0 || (names.length === 1 && names[0].startsWith('Dora')), `the list saw the environment before the reset or after it, empty: ${JSON.stringify(names)}`);
});

t.test('payments racing a reset: each ran wholly before it (and is gone) or after it (and names accounts that exist)', async (t) => {
  const first = await ok(api.request('POST', '/customers', { json: { name: 'Eve' } }));
  const seeded = await ok(api.request('POST', '/transactions', { json: { type: 'payment', amount: 1, customer_id: first.id, payment_method: CARD } }));
  await seedPayments(orgs.acme, seeded.id, 2000);
  const before = new Set((await api.db('accounts').where({ org_id: orgs.acme, environment: 'test' }).select('id')).map((a: { id: string }) => a.id));
  let resetAnswered = false;
  const paid: Array<{ id: string; customer: string }> = [];
  const refused: string[] = [];
  // Each loop pays as a client would; when its customer is gone (the reset ran), it makes a new one and goes on.
  const loop = async () => {
    let customer = first.id;
    for (let after = 0; after < 5;) {
      const res = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 2, customer_id: customer, payment_method: CARD } });
      if (res.status === 200) paid.push({ id: res.body.id, customer });
      else if (res.status === 400 && JSON.stringify(res.body.details).includes('No account')) {
        refused.push(customer);
        customer = (await ok(api.request('POST', '/customers', { json: { name: 'After' } }))).id;
      } else throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
      if (resetAnswered) after += 1;
    }
  };
  const loops = [loop(), loop(), loop(), loop()];
  await eventually(async () => paid.length, (n) => n >= 8);
  const started = performance.now();
  const reset = await ok(api.request('DELETE', '/test_data'));
  const resetMs = performance.now() - started;
  resetAnswered = true;
  await Promise.all(loops);
  t.comment(`${paid.length} payments answered 200, ${refused.length} refused for a customer the reset deleted; ` +
    `the reset deleted ${reset.deleted.transactions} transactions and ${reset.deleted.ledger_entries} ledger legs in ${resetMs.toFixed(0)} ms`);

  const orphans = (await api.db.raw(
    `select t.id from transactions t
      where t.org_id = ? and t.environment = 'test'
        and (not exists (select 1 from accounts a where a.id = t.data->>'customer_id')
          or not exists (select 1 from accounts a where a.id = t.data->>'processing_id')
          or not exists (select 1 from payment_methods m where m.id = t.data->>'payment_method_id'))`, [orgs.acme])).rows;
  t.same(orphans, [], 'no payment names a customer, processing account or method that is gone');
  const traces = (await api.db.raw(
    `select 'ledger' as kind, transaction_id as id from ledger_entries l where org_id = ? and environment = 'test' and not exists (select 1 from transactions t where t.id = l.transaction_id)
     union all
     select 'operation', data->>'transaction_id' from transaction_operations o where org_id = ? and environment = 'test' and not exists (select 1 from transactions t where t.id = o.data->>'transaction_id')
     union all
     select 'event', object_id from events e where org_id = ? and environment = 'test' and object_type = 'transaction' and not exists (select 1 from transactions t where t.id = e.object_id)
     union all
     select 'missing legs', t.id from transactions t where org_id = ? and environment = 'test' and not exists (select 1 from ledger_entries l where l.transaction_id = t.id)`,
    [orgs.acme, orgs.acme, orgs.acme, orgs.acme])).rows;
  t.same(traces, [], 'no ledger leg, operation or event outlives its payment, and every payment has its legs: no half state');
  const defaultAccount = await api.db('accounts').where({ id: reset.default_processing_account_id }).first();
  const surviving = await api.db('transactions').whereIn('id', paid.map((p) => p.id)).select('id', 'created_at', 'data');
  const survivors = new Set(surviving.map((s: { id: string }) => s.id));
  for (const payment of paid) {
    if (!survivors.has(payment.id)) continue;
    if (before.has(payment.customer)) t.fail(`${payment.id} survived but names ${payment.customer}, a customer from before the reset`);
  }
  t.ok(surviving.every((s: { created_at: Date }) => s.created_at > defaultAccount.created_at), 'every surviving payment was made after the reset');
  t.ok(paid.length - survivors.size > 0, `${paid.length - survivors.size} payments ran before the reset and are gone`);
  t.ok(survivors.size > 0, `${survivors.size} payments ran after it and stand`);
  t.ok(refused.length > 0 && refused.every((c) => before.has(c)), 'the refused payments named customers the reset had deleted');
});

t.test("another org's requests keep answering while a large reset runs", async (t) => {
  const customer = await ok(api.request('POST', '/customers', { json: { name: 'Finn' } }));
  const seeded = await ok(api.request('POST', '/transactions', { json: { type: 'payment', amount: 1, customer_id: customer.id, payment_method: CARD } }));
  await seedPayments(orgs.acme, seeded.id, 4000);
  const other = requestAs(globex);
  const payer = await ok(other('POST', '/customers', { name: 'Gus' }));
  // The test holds one of the payments: the reset, mid-delete with its locks and thousands of deleted rows, waits there.
  const pause = await api.db.transaction();
  await pause.raw('select 1 from transactions where id = ? for update', [seeded.id]);
  let resetAnswered = false;
  const started = performance.now();
  const reset = api.request('DELETE', '/test_data').then((res) => {
    resetAnswered = true;
    return res;
  });
  const stuck = await eventually(() => waitingOn('complete_jobs'), (events) => events.length > 0);
  t.ok(stuck.length > 0, `the reset is deleting, waiting for the held row (${stuck.join(', ')})`);
  const latencies: number[] = [];
  const statuses: number[] = [];
  const loop = async (work: () => Promise<ApiResponse>) => {
    for (let i = 0; i < 20; i++) {
      const at = performance.now();
      statuses.push((await work()).status);
      latencies.push(performance.now() - at);
    }
  };
  await Promise.all([
    loop(() => other('GET', '/transactions?limit=10')),
    loop(() => other('POST', '/transactions', { type: 'payment', amount: 3, customer_id: payer.id, payment_method: CARD })),
    loop(() => other('GET', `/customers/${payer.id}`)),
  ]);
  t.notOk(resetAnswered, 'all of them were answered while the reset was still running');
  t.same([...new Set(statuses)], [200], `${statuses.length} requests of the other org, every one answered 200`);
  await pause.rollback();
  const answered = await reset;
  const resetMs = performance.now() - started;
  t.equal(answered.status, 200);
  t.ok(answered.body.deleted.transactions > 4000, `the reset deleted ${answered.body.deleted.transactions} transactions and ${answered.body.deleted.ledger_entries} ledger legs`);
  const sorted = [...latencies].sort((a, b) => a - b);
  t.comment(`globex during the reset: ${sorted.length} requests, p50 ${sorted[Math.floor(sorted.length / 2)].toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms; the reset answered after ${resetMs.toFixed(0)} ms (held mid-delete by the test meanwhile)`);
});

t.test('every table that holds tenant rows is emptied by a reset or kept on purpose (a new family table must say which)', async (t) => {
  const tables = (await api.db.raw(
    `select table_name from information_schema.columns c join information_schema.tables using (table_schema, table_name)
      where c.table_schema = 'public' and table_type = 'BASE TABLE' and c.column_name in ('org_id', 'environment')
      group by table_name having count(*) = 2 order by 1`)).rows.map((r: { table_name: string }) => r.table_name);
  t.same(tables, [...RESET_TABLES, 'audit_events', ...KEPT_TABLES].sort(), 'audit_events is emptied through reset_audit_events');
});
