/**
 * Billing schedules and their charges (CONTRACT §12): v1 and v2 bodies as the client libraries
 * send them (a lone charge object included), every frequency, nested children with their `object`
 * and parent id, `recurring_amount` kept in step with the charges, and no back-filled invoices.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';
import { loadConfig } from '../api/config.ts';
import { createDomainServices } from '../api/domain.ts';
import { billingDates } from '../api/families/billing_schedules/calendar.ts';
import { FREQUENCIES } from '../api/families/billing_schedules/family.ts';
import { runBillingDay } from '../api/families/billing_schedules/run.ts';
import { moveTestClock, readTestClock } from '../api/families/billing_schedules/testClock.ts';

const api = await startTestApi(t);
const biller = (await api.request('POST', '/processing_accounts', { json: { name: 'Biller' } })).body.id;
const customer = (await api.request('POST', '/customers', { json: { name: 'Subscriber', email: 's@example.com' } })).body.id;

const domain = createDomainServices(loadConfig({ DATABASE_URL: api.databaseUrl }));
const orgId = (await api.db('orgs').where({ name: 'acme' }).first()).id;
const tenant = { orgId, environment: 'test' as const };
const DAY = 86_400_000;
const dateOf = (time: number) => new Date(time).toISOString().slice(0, 10);
const TODAY = dateOf(Date.now());

const V1_BODY = {
  start_date: '2019-01-01', end_date: '2019-12-31', recurring_frequency: 'monthly', type: 'subscription',
  customer_id: customer, processing_id: biller, charges: { object: 'billing_charge', type: 'option_1', amount: 5.0 },
};

async function schedule(json: Record<string, unknown> = V1_BODY, version?: string) {
  const res = await api.request('POST', '/billing_schedules', { json, version });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body;
}

t.test('a v1 schedule with one charge object: charges[0] is a billing_charge of the schedule', async (t) => {
  const created = await schedule();
  t.match(created, { object: 'billing_schedule', type: 'subscription', processing_id: biller, customer_id: customer, recurring_frequency: 'monthly', start_date: '2019-01-01', end_date: '2019-12-31', recurring_amount: 5 });
  t.match(created.id, /^bscd_/);
  t.equal(created.charges.length, 1);
  t.match(created.charges[0], { object: 'billing_charge', type: 'option_1', amount: 5, qty: 1, total: 5, billing_schedule_id: created.id });
  t.match(created.charges[0].id, /^bcrg_/);
  const invoices = await api.db('invoices').whereRaw("data->>'billing_schedule_id' = ?", [created.id]);
  t.equal(invoices.length, 0, 'a schedule entirely in the past produces no invoices');
  const selected = await api.request('GET', `/billing_schedules/${created.id}?fields[0]=*&fields[1]=charges`);
  t.equal(selected.status, 200);
  t.equal(selected.body.charges[0].billing_schedule_id, created.id);
});

t.test('a v2 schedule: payer, biller, recurring_schedule and billing_item children', async (t) => {
  const created = await schedule({
    start_date: '2019-01-01', end_date: '2019-12-31', recurring_schedule: { type: 'daily' },
    payer: { account_id: customer }, biller: { account_id: biller },
    items: [{ object: 'billing_item', type: 'line_item', line_item: { value: 5.0, value_units: 'number', qty: 2 } }],
  }, 'v2');
  t.match(created, { object: 'billing_schedule', biller: { account_id: biller }, payer: { account_id: customer }, recurring_schedule: { type: 'daily' }, totals: { recurring_amount: 10 } });
  t.match(created.items[0], { object: 'billing_item', type: 'line_item', billing_schedule_id: created.id, line_item: { value: 5, qty: 2 } });
  const v1 = await api.request('GET', `/billing_schedules/${created.id}`);
  t.match(v1.body, { recurring_frequency: 'daily', charges: [{ object: 'billing_charge', amount: 5, qty: 2, total: 10 }] }, 'the same rows in v1');
});

t.test('updating the frequency answers the updated schedule, in both versions', async (t) => {
  const created = await schedule();
  const v1 = await api.request('PUT', `/billing_schedules/${created.id}`, { json: { recurring_frequency: 'quarterly' } });
  t.equal(v1.status, 200, JSON.stringify(v1.body));
  t.equal(v1.body.recurring_frequency, 'quarterly');
  t.equal(v1.body.charges[0].amount, 5, 'charges still shown');
  const v2 = await api.request('PUT', `/billing_schedules/${created.id}`, { version: 'v2', json: { recurring_schedule: { type: 'annually', annually: { billing_day: 15, billing_month: 6 } } } });
  t.equal(v2.status, 200, JSON.stringify(v2.body));
  t.match(v2.body.recurring_schedule, { type: 'annually', annually: { billing_day: 15, billing_month: 6 } });
});

t.test('every frequency of the contract is accepted, with its details', async (t) => {
  const details: Record<string, Record<string, unknown>> = {
    monthly: { monthly: { billing_day: 31 } },
    annually: { annually: { billing_day: 1, billing_month: 12 } },
    bimonthly: { bimonthly: { first_billing_day: 1, second_billing_day: 15 } },
    quarterly: { quarterly: { q1: { billing_day: 1, billing_month: 1 }, q2: { billing_day: 1 } } },
  };
  for (const frequency of FREQUENCIES) {
    const res = await api.request('POST', '/billing_schedules', { json: { ...V1_BODY, recurring_frequency: frequency, ...details[frequency] } });
    t.equal(res.status, 200, `${frequency}: ${JSON.stringify(res.body)}`);
    t.equal(res.body.recurring_frequency, frequency);
  }
});

t.test('charges are a collection of their own and keep recurring_amount in step', async (t) => {
  const created = await schedule();
  const added = await api.request('POST', '/billing_charges', { json: { billing_schedule_id: created.id, type: 'addon', amount: 2.5, qty: 2 } });
  t.equal(added.status, 200, JSON.stringify(added.body));
  t.match(added.body, { object: 'billing_charge', total: 5 });
  t.equal((await api.request('GET', `/billing_schedules/${created.id}`)).body.recurring_amount, 10);
  const v2 = await api.request('GET', `/billing_items?billing_schedule_id=${created.id}`, { version: 'v2' });
  t.equal(v2.body.values.length, 2);
  t.equal(v2.body.values[0].object, 'billing_item');
  t.equal((await api.request('GET', `/billing_charges?type=addon&billing_schedule_id=${created.id}`)).body.values.length, 1);
  const changed = await api.request('PUT', `/billing_charges/${added.body.id}`, { json: { qty: 1 } });
  t.equal(changed.body.total, 2.5);
  t.equal((await api.request('GET', `/billing_schedules/${created.id}`)).body.recurring_amount, 7.5);
  t.equal((await api.request('DELETE', `/billing_charges/${added.body.id}`)).status, 200);
  t.equal((await api.request('GET', `/billing_schedules/${created.id}`)).body.recurring_amount, 5);
});

t.test('deleting a schedule deletes its charges; another tenant sees nothing', async (t) => {
  const created = await schedule();
  const otherKey = await api.newKey('other-billing', 'test');
  t.equal((await api.request('GET', `/billing_schedules/${created.id}`, { key: otherKey })).status, 404);
  t.equal((await api.request('GET', '/billing_schedules', { key: otherKey })).body.values.length, 0);
  t.equal((await api.request('POST', '/billing_charges', { key: otherKey, json: { billing_schedule_id: created.id, amount: 1 } })).status, 400);
  const deleted = await api.request('DELETE', `/billing_schedules/${created.id}`);
  t.equal(deleted.status, 200);
  t.equal(deleted.body.object, 'billing_schedule');
  t.equal((await api.request('GET', `/billing_schedules/${created.id}`)).status, 404);
  t.equal((await api.db('billing_charges').whereRaw("data->>'billing_schedule_id' = ?", [created.id])).length, 0);
});

t.test('malformed schedule and charge input is a 400 in the error format', async (t) => {
  const created = await schedule();
  const cases: Array<[string, string, Record<string, unknown>, string?]> = [
    ['POST', '/billing_schedules', { ...V1_BODY, customer_id: undefined }],
    ['POST', '/billing_schedules', { ...V1_BODY, start_date: 'someday' }],
    ['POST', '/billing_schedules', { ...V1_BODY, start_date: undefined }],
    ['POST', '/billing_schedules', { ...V1_BODY, end_date: '2018-01-01' }],
    ['POST', '/billing_schedules', { ...V1_BODY, recurring_frequency: 'hourly' }],
    ['POST', '/billing_schedules', { ...V1_BODY, recurring_frequency: undefined }],
    ['POST', '/billing_schedules', { ...V1_BODY, monthly: { billing_day: 32 } }],
    ['POST', '/billing_schedules', { ...V1_BODY, annually: { billing_month: 13 } }],
    ['POST', '/billing_schedules', { ...V1_BODY, quarterly: { q5: { billing_day: 1 } } }],
    ['POST', '/billing_schedules', { ...V1_BODY, charges: 'x' }],
    ['POST', '/billing_schedules', { ...V1_BODY, charges: [{ amount: 0 }] }],
    ['POST', '/billing_schedules', { ...V1_BODY, charges: [{ type: 'no amount' }] }],
    ['POST', '/billing_schedules', { ...V1_BODY, charges: [{ amount: 1, start_date: 'x' }] }],
    ['POST', '/billing_schedules', { ...V1_BODY, processing_id: customer }],
    ['POST', '/billing_schedules', { ...V1_BODY, customer_id: biller }],
    ['POST', '/billing_schedules', { start_date: '2019-01-01', recurring_schedule: { type: 'daily' }, payer: { account_id: customer }, items: [{ type: 'item_group' }] }, 'v2'],
    ['PUT', `/billing_schedules/${created.id}`, { charges: [{ amount: 1 }] }],
    ['PUT', `/billing_schedules/${created.id}`, { customer_id: 'acct_other' }],
    ['PUT', `/billing_schedules/${created.id}`, { end_date: '2000-01-01' }],
    ['POST', '/billing_charges', { billing_schedule_id: 'bscd_nope', amount: 1 }],
    ['POST', '/billing_charges', { billing_schedule_id: created.id }],
    ['POST', '/billing_charges', { billing_schedule_id: created.id, amount: -3 }],
  ];
  for (const [method, path, json, version] of cases) {
    const res = await api.request(method, path, { json, version });
    t.equal(res.status, 400, `${method} ${path} ${JSON.stringify(json)} → ${JSON.stringify(res.body)}`);
    t.equal(res.body.object, 'error');
  }
});

t.test('billing dates: every frequency, month ends clamped, anchored at the start date', async (t) => {
  t.same(billingDates({ type: 'daily' }, '2019-01-01', '2026-11-20', '2026-11-22'), ['2026-11-20', '2026-11-21', '2026-11-22']);
  t.same(billingDates({ type: 'weekly' }, '2026-11-02', '2026-11-10', '2026-12-01'), ['2026-11-16', '2026-11-23', '2026-11-30']);
  t.same(billingDates({ type: 'biweekly' }, '2026-11-02', '2026-11-01', '2026-12-01'), ['2026-11-02', '2026-11-16', '2026-11-30']);
  t.same(billingDates({ type: 'monthly' }, '2026-01-31', '2026-01-01', '2026-04-30'), ['2026-01-31', '2026-02-28', '2026-03-31', '2026-04-30']);
  t.same(billingDates({ type: 'monthly', monthly: { billing_day: 5 } }, '2026-01-10', '2026-01-01', '2026-03-31'), ['2026-02-05', '2026-03-05'], 'nothing before the start');
  t.same(billingDates({ type: 'bimonthly' }, '2026-11-02', '2026-11-01', '2026-12-31'), ['2026-11-15', '2026-12-01', '2026-12-15']);
  t.same(billingDates({ type: 'quarterly' }, '2026-02-10', '2026-01-01', '2026-12-31'), ['2026-02-10', '2026-05-10', '2026-08-10', '2026-11-10']);
  t.same(billingDates({ type: 'quarterly', quarterly: { q1: { billing_day: 5, billing_month: 1 }, q3: { billing_day: 31, billing_month: 3 } } }, '2026-01-01', '2026-01-01', '2026-12-31'), ['2026-01-05', '2026-09-30']);
  t.same(billingDates({ type: 'annually', annually: { billing_day: 29, billing_month: 2 } }, '2026-01-01', '2026-01-01', '2028-12-31'), ['2026-02-28', '2027-02-28', '2028-02-29']);
  t.same(billingDates({ type: 'daily' }, '2026-01-01', '2026-02-01', '2026-01-31'), [], 'an empty window');
});

t.test('the invoicing run bills each date once from the day the schedule was created, with the charges active then', async (t) => {
  const created = await schedule({
    ...V1_BODY, start_date: dateOf(Date.now() - 10 * DAY), end_date: null, recurring_frequency: 'daily', description: 'Daily plan',
    charges: [{ type: 'base', amount: 2 }, { type: 'promo', amount: 1.5, end_date: dateOf(Date.now() + DAY) }],
  });
  const first = await runBillingDay(api.db, domain, tenant, new Date());
  const mine = async () => (await api.request('GET', `/billing_schedules/${created.id}?fields=*,invoices`)).body.invoices;
  t.same((await mine()).map((i: { due_date: string }) => i.due_date), [TODAY], 'never back-filled before its creation');
  t.ok(first.invoices.length >= 1);
  const again = await runBillingDay(api.db, domain, tenant, new Date());
  t.equal(again.invoices.filter((id) => first.invoices.includes(id)).length, 0);
  t.equal((await mine()).length, 1, 'a re-run produces nothing new');
  const later = new Date(Date.now() + 3 * DAY);
  await Promise.all([runBillingDay(api.db, domain, tenant, later), runBillingDay(api.db, domain, tenant, later)]);
  const invoices = await mine();
  t.same(invoices.map((i: { due_date: string }) => i.due_date), [0, 1, 2, 3].map((n) => dateOf(Date.now() + n * DAY)), 'racing runs produce each date once');
  t.match(invoices[0], { object: 'invoice', status: 'unpaid', customer_id: customer, processing_id: biller, billing_schedule_id: created.id, total_due: 3.5, description: 'Daily plan' });
  t.same(invoices.map((i: { total_due: number }) => i.total_due), [3.5, 3.5, 2, 2], 'the promo charge ends tomorrow');
  const full = await api.request('GET', `/invoices/${invoices[0].id}`);
  t.match(full.body.items, [{ object: 'line_item', type: 'base', amount: 2 }, { object: 'line_item', type: 'promo', amount: 1.5 }]);
  t.equal((await api.request('GET', `/billing_schedules/${created.id}`)).body.total_due, 3.5 + 3.5 + 2 + 2, 'total_due sums its invoices');
});

async function autopayCustomer(cardNumber: string): Promise<string> {
  const cust = (await api.request('POST', '/customers', { json: { name: 'Autopay' } })).body.id;
  const pm = await api.request('POST', '/payment_methods', { version: 'v2', json: { type: 'card', account_id: cust, card: { card_number: cardNumber, expiry: '12/35' }, account_defaults: { paying: 'all' } } });
  if (pm.status !== 200) throw new Error(JSON.stringify(pm.body));
  return cust;
}

t.test('automatic payments charge a due invoice from the default method, marked automatic', async (t) => {
  const cust = await autopayCustomer('4242 4242 4242 4242');
  const inv = (await api.request('POST', '/invoices', { json: { customer_id: cust, due_date: TODAY, items: [{ amount: 12.5 }] } })).body;
  const skipped = (await api.request('POST', '/invoices', { json: { customer_id: cust, due_date: TODAY, autopay_allowed: false, items: [{ amount: 1 }] } })).body;
  const result = await runBillingDay(api.db, domain, tenant, new Date());
  const paid = await api.request('GET', `/invoices/${inv.id}`);
  t.equal(paid.body.status, 'paid');
  const payments = await api.request('GET', `/transactions?trigger=automatic&customer_id=${cust}`);
  t.equal(payments.body.values.length, 1);
  t.match(payments.body.values[0], { type: 'payment', amount: 12.5, status: 'processed', trigger: 'automatic' });
  t.ok(result.payments.includes(payments.body.values[0].id));
  t.equal((await api.db('events').where({ trigger: 'automatic_payment', object_id: payments.body.values[0].id })).length, 1);
  t.equal((await api.request('GET', `/invoices/${skipped.id}`)).body.status, 'unpaid', 'autopay not allowed');
  const manual = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 1, customer_id: cust, allocations: [{ invoice_id: skipped.id }] } });
  t.equal(manual.body.trigger, 'manual');
});

t.test("a schedule's payer.method_id is the method its invoices are charged from", async (t) => {
  const cust = await autopayCustomer('4111 1111 1111 9903');
  const chosen = await api.request('POST', '/payment_methods', { version: 'v2', json: { type: 'card', account_id: cust, card: { card_number: '5103 2088 7967 2792', expiry: '12/35' } } });
  const other = await api.request('POST', '/billing_schedules', { version: 'v2', json: { start_date: TODAY, recurring_schedule: { type: 'daily' }, payer: { account_id: cust, method_id: 'pm_elsewhere' }, items: { type: 'line_item', line_item: { value: 1 } } } });
  t.equal(other.status, 400, 'a method of the payer only');
  const created = await api.request('POST', '/billing_schedules', { version: 'v2', json: { start_date: TODAY, recurring_schedule: { type: 'daily' }, payer: { account_id: cust, method_id: chosen.body.id }, items: { type: 'line_item', line_item: { value: 4 } } } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  await runBillingDay(api.db, domain, tenant, new Date());
  const payments = (await api.request('GET', `/transactions?trigger=automatic&customer_id=${cust}`)).body.values;
  t.match(payments, [{ status: 'processed', amount: 4, payment_method_id: chosen.body.id }], 'not the declining default');
  const produced = (await api.request('GET', `/billing_schedules/${created.body.id}?fields=*,invoices`, { version: 'v2' })).body.invoices;
  t.match(produced, [{ status: 'paid', due_date: TODAY, payer: { method_id: chosen.body.id } }]);
});

t.test('a declined automatic payment leaves a zero item and is retried daily for 5 days', async (t) => {
  const cust = await autopayCustomer('4111 1111 1111 9903');
  const inv = (await api.request('POST', '/invoices', { json: { customer_id: cust, due_date: TODAY, items: [{ amount: 7 }] } })).body;
  const attemptsFor = async () => (await api.request('GET', `/transactions?trigger=automatic&customer_id=${cust}`)).body.values;
  await runBillingDay(api.db, domain, tenant, new Date());
  const first = await attemptsFor();
  t.equal(first.length, 1);
  t.equal(first[0].status, 'declined');
  const items = await api.request('GET', `/line_items?invoice_id=${inv.id}&entry_type=payment`);
  t.match(items.body.values, [{ amount: 0, transaction_id: first[0].id }], 'a zero-amount payment item');
  t.equal((await api.request('GET', `/invoices/${inv.id}`)).body.status, 'unpaid');
  await runBillingDay(api.db, domain, tenant, new Date());
  t.equal((await attemptsFor()).length, 1, 'once a day');
  for (const days of [1, 2, 3, 4, 5, 6, 7]) await runBillingDay(api.db, domain, tenant, new Date(Date.now() + days * DAY));
  t.equal((await attemptsFor()).length, 6, 'the due date and the 5 days after it');
});

t.test('moving the test clock invoices and charges each week it passes, in time order', async (t) => {
  const clockOrg = await api.newKey('clock-org', 'test');
  const org = (await api.db('orgs').where({ name: 'clock-org' }).first()).id;
  const clockTenant = { orgId: org, environment: 'test' as const };
  await api.request('POST', '/processing_accounts', { key: clockOrg, json: { name: 'Clock biller' } });
  const cust = (await api.request('POST', '/customers', { key: clockOrg, json: { name: 'Clock payer' } })).body.id;
  const pm = await api.request('POST', '/payment_methods', { key: clockOrg, version: 'v2', json: { type: 'card', account_id: cust, card: { card_number: '4242 4242 4242 4242', expiry: '12/35' }, account_defaults: { paying: 'all' } } });
  t.equal(pm.status, 200, JSON.stringify(pm.body));
  const weekly = await api.request('POST', '/billing_schedules', { key: clockOrg, json: { customer_id: cust, start_date: TODAY, recurring_frequency: 'weekly', charges: { amount: 9.99 } } });
  t.equal(weekly.status, 200, JSON.stringify(weekly.body));
  const target = new Date(Date.now() + 15 * DAY).toISOString();
  const moved = await moveTestClock(api.db, domain, clockTenant, target);
  t.equal(moved.now, target.slice(0, 19).replace('T', ' '));
  t.equal((await readTestClock(api.db, clockTenant, new Date())).now, moved.now);
  const invoices = (await api.request('GET', `/invoices?billing_schedule_id=${weekly.body.id}&order_by=due_date`, { key: clockOrg })).body.values;
  t.same(invoices.map((i: { due_date: string }) => i.due_date), [0, 7, 14].map((n) => dateOf(Date.now() + n * DAY)), 'one invoice per week passed');
  t.same(invoices.map((i: { status: string }) => i.status), ['paid', 'paid', 'paid'], 'each charged on its due date');
  t.equal((await api.request('GET', `/transactions?trigger=automatic`, { key: clockOrg })).body.values.length, 3);
});

t.test('the billing run makes its invoices through the invoice service, as the system, whoever moved the clock', async (t) => {
  const key = await api.newKey('run-actor-org', 'test');
  const biller = (await api.request('POST', '/processing_accounts', { key, json: { name: 'Run biller' } })).body.id;
  const payer = (await api.request('POST', '/customers', { key, json: { name: 'Run payer' } })).body.id;
  const made = await api.request('POST', '/billing_schedules', {
    key, json: { customer_id: payer, processing_id: biller, start_date: TODAY, recurring_frequency: 'weekly', charges: [{ type: 'seat', amount: 4.25, qty: 2 }] },
  });
  t.equal(made.status, 200, JSON.stringify(made.body));
  const moved = await api.request('PUT', '/test_clock', { key, json: { now: new Date(Date.now() + DAY).toISOString() } });
  t.equal(moved.status, 200, JSON.stringify(moved.body));
  const [invoice] = (await api.request('GET', `/invoices?billing_schedule_id=${made.body.id}`, { key })).body.values;
  t.match(invoice, { customer_id: payer, processing_id: biller, due_date: TODAY, total_due: 8.5, status: 'unpaid' });
  t.match((await api.request('GET', `/invoices/${invoice.id}`, { key })).body.items, [{ object: 'line_item', type: 'seat', amount: 4.25, qty: 2, total: 8.5 }]);
  const history = (await api.request('GET', `/audit_events?object_id=${invoice.id}&order_by=asc(created_at)`, { key })).body.values;
  t.match(history[0], { action: 'create', object_type: 'invoice', actor: { type: 'system', name: 'billing_run' } });
  t.ok(history.every((event: { actor: { type: string } }) => event.actor.type === 'system'), 'its automatic payment\'s changes too');
});

t.test("the billing run marks a schedule billed through the schedule family's update, as the system: the family's rules hold, and no event", async (t) => {
  const key = await api.newKey('run-schedule-org', 'test');
  const runTenant = { orgId: (await api.db('orgs').where({ name: 'run-schedule-org' }).first()).id, environment: 'test' as const };
  const payer = (await api.request('POST', '/customers', { key, json: { name: 'Run payer' } })).body.id;
  const card = async () => (await api.request('POST', '/payment_methods', { key, version: 'v2', json: { type: 'card', account_id: payer, card: { card_number: '4242 4242 4242 4242', expiry: '12/35' } } })).body.id;
  // Daily from today, its one charge active only from next month: today's run bills nothing and marks the schedule billed.
  const scheduleFrom = async (method: string) => (await api.request('POST', '/billing_schedules', {
    key, json: { customer_id: payer, payment_method_id: method, start_date: TODAY, recurring_frequency: 'daily', charges: [{ amount: 3, start_date: dateOf(Date.now() + 30 * DAY) }] },
  })).body.id;
  const kept = await scheduleFrom(await card());
  const gone = await card();
  const lapsed = await scheduleFrom(gone);
  t.equal((await api.request('DELETE', `/payment_methods/${gone}`, { key })).status, 200);
  t.equal((await api.request('PUT', `/billing_schedules/${lapsed}`, { key, json: { description: 'Renamed' } })).status, 400, 'a client cannot change a schedule whose method is gone');

  const run = await runBillingDay(api.db, domain, runTenant, new Date());
  t.same(run.invoices, []);
  const historyOf = async (id: string) => (await api.request('GET', `/audit_events?object_id=${id}&order_by=asc(created_at)`, { key })).body.values;
  t.match(await historyOf(kept), [
    { action: 'create', object_type: 'billing_schedule' },
    { action: 'update', object_type: 'billing_schedule', actor: { type: 'system', name: 'billing_run' }, changes: { billed_through: [null, TODAY] } },
  ]);
  t.equal((await historyOf(kept)).length, 2);
  t.same((await historyOf(lapsed)).map((event: { action: string }) => event.action), ['create'], 'nor can the run: the family refuses the change, and the schedule is tried again next run');
  t.equal((await api.db('events').whereIn('object_id', [kept, lapsed])).length, 0, 'marking a schedule billed is no client-facing event');
});

/** A tenant of its own whose test clock stands a day ahead. */
async function clockADayAhead(name: string) {
  await api.newKey(name, 'test');
  const org = (await api.db('orgs').where({ name }).first()).id;
  const tenant = { orgId: org, environment: 'test' as const };
  const target = new Date(Date.now() + DAY).toISOString();
  await moveTestClock(api.db, domain, tenant, target);
  return { org, tenant, target };
}

const statusOf = (moving: Promise<unknown>) => moving.then(() => 200, (error: { status?: number }) => error.status);

t.test('the test clock never moves backwards', async (t) => {
  const { tenant } = await clockADayAhead('clock-backwards');
  t.equal(await statusOf(moveTestClock(api.db, domain, tenant, new Date().toISOString())), 400);
});

t.test('the test clock refuses a time it cannot read', async (t) => {
  const { tenant } = await clockADayAhead('clock-unreadable');
  t.equal(await statusOf(moveTestClock(api.db, domain, tenant, 'tomorrow')), 400);
});

t.test('a live environment has no test clock', async (t) => {
  const { org, target } = await clockADayAhead('clock-live');
  t.equal(await statusOf(moveTestClock(api.db, domain, { orgId: org, environment: 'live' }, target)), 403);
});
