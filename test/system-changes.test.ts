/**
 * Changes the service makes on its own (a worker's status change, a client token's finish of its
 * intent, an invoice's recompute) pass the same door as a client's: the family's update
 * (api/engine/operations.ts: updateNested), whose one statement writes the row with its audit
 * event (the job's, the token's or the request's actor), and whose family rules decide the
 * operation and the events, once; no database function changes a family's rows beside it but those
 * listed. Which writer wrote an audit event is read from a test-only trigger (./helpers/auditWriters.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { loadConfig } from '../api/config.ts';
import { createDb } from '../api/db/connection.ts';
import { families } from '../api/families/index.ts';
import { createLogger } from '../api/logger.ts';
import { openVault } from '../api/vaultKeys.ts';
import { taskList } from '../workers/main.ts';
import { startTestApi } from './helpers/api.ts';
import { BY_STATEMENT, noteAuditWriters } from './helpers/auditWriters.ts';

const api = await startTestApi(t);
await noteAuditWriters(api.db);

/** What the audit names of a method whose paying default another method took. */
const AUDITED_DEFAULT_TAKEN = { account_defaults: [{ paying: 'all' }, {}] };
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };
const BANK = { type: 'bank_account', bank_account: { account_number: '000123456', routing_number: '036001808', account_type: 'checking' } };
const customer = (await api.request('POST', '/customers', { json: { name: 'Payer' } })).body;

/** The worker's tasks, run directly as graphile-worker runs a job (each as the actor `system`, named by its task). */
const workerDb = createDb(api.databaseUrl, 2);
t.teardown(() => workerDb.destroy());
const config = loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: api.databaseUrl });
const tasks = taskList(workerDb, config, {}, await openVault(config, workerDb, createLogger('silent', 'test')));
const runTask = (name: string, payload: Record<string, unknown>) => tasks[name]!(payload, {} as never);

async function auditOf(objectId: string): Promise<Array<{ data: Record<string, any>; depth: number }>> {
  return (await api.db.raw(`select a.data, w.depth from audit_events a left join test_audit_writers w on w.event_id = a.id
                             where a.data->>'object_id' = ? and a.data->>'action' <> 'create' order by a.id`, [objectId])).rows;
}

async function triggersOf(objectId: string): Promise<string[]> {
  return (await api.db('events').where({ object_id: objectId }).orderBy('seq')).map((e: { trigger: string }) => e.trigger);
}

async function operationsOf(transactionId: string): Promise<string[]> {
  return (await api.db.raw(`select type from transaction_operations where data->>'transaction_id' = ? order by id`, [transactionId])).rows.map((r: { type: string }) => r.type);
}

t.test('an authorization the worker expires is voided through the family\'s update: audited once by its statement as the job, one operation, one event each', async (t) => {
  const auth = await api.request('POST', '/transactions', { version: 'v2', json: { type: 'payment', amount: 5, status: { value: 'authorized' }, sender: { account_id: customer.id, method: CARD } } });
  t.equal(auth.status, 200, JSON.stringify(auth.body));
  const id = auth.body.id;
  await runTask('expire_authorization', { transaction_id: id });
  const expired = (await api.request('GET', `/transactions/${id}`)).body;
  t.match(expired, { status: 'voided', status_code: 'authorization_expired' });
  const audit = await auditOf(id);
  t.same(audit.map((e) => [e.depth, e.data.action]), [[BY_STATEMENT, 'void']], 'one event, by the door\'s statement');
  t.match(audit[0].data, { actor: { type: 'system', name: 'expire_authorization' }, changes: { status: ['authorized', 'voided'], status_code: ['approved', 'authorization_expired'] } });
  t.same(await operationsOf(id), ['authorize', 'void']);
  t.same((await triggersOf(id)).sort(), ['authorized', 'payment', 'transaction:operation', 'transaction:operation', 'void'], 'the void and its operation, once each');
  await runTask('expire_authorization', { transaction_id: id });
  t.equal((await auditOf(id)).length, 1, 'a second run finds it moved on and changes nothing');
});

t.test('the bank rejects a payment a client could no longer reject (a refund taken): the family\'s own rule for the service\'s change, audited by its statement', async (t) => {
  const paid = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 20, customer_id: customer.id, payment_method: BANK } });
  t.equal(paid.body.status, 'processed', JSON.stringify(paid.body));
  const refund = await api.request('POST', '/transactions', { json: { type: 'refund', amount: 5, ledger: [{ assoc_transaction_id: paid.body.id }] } });
  t.equal(refund.status, 200, JSON.stringify(refund.body));
  const byClient = await api.request('PUT', `/transactions/${paid.body.id}`, { json: { status: 'rejected' } });
  t.equal(byClient.status, 400, 'a client may not reject a payment with refunds');
  await runTask('bank_reject', { transaction_id: paid.body.id });
  t.match((await api.request('GET', `/transactions/${paid.body.id}`)).body, { status: 'rejected', status_code: 'bank_account_rejected' });
  const audit = await auditOf(paid.body.id);
  t.same(audit.map((e) => [e.depth, e.data.action, e.data.actor]), [[BY_STATEMENT, 'reject', { type: 'system', name: 'bank_reject' }]]);
  t.same((await operationsOf(paid.body.id)).filter((type) => type === 'reject'), ['reject'], 'one operation');
  t.same((await triggersOf(paid.body.id)).filter((trigger) => trigger.includes('reject')), ['reject', 'bank_account_reject'], 'its events once');
});

t.test('a client token\'s payment finishes its element intent through the intents family\'s update: audited once by its statement as the token, one status event', async (t) => {
  const intent = await api.request('POST', '/intents', { version: 'v2', json: { type: 'payment_form', payment_form: { payment: { amount: 7, description: 'Tea' } } } });
  t.equal(intent.status, 200, JSON.stringify(intent.body));
  const token = intent.body.client_token;
  const paid = await api.request('POST', '/transactions', { key: token, json: { type: 'payment', amount: 7, payment_method: CARD } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  t.equal((await api.request('GET', `/intents/${intent.body.id}`)).body.status, 'finished');
  const audit = await auditOf(intent.body.id);
  t.same(audit.map((e) => [e.depth, e.data.action]), [[BY_STATEMENT, 'update']], 'one event, by the door\'s statement');
  t.match(audit[0].data, { actor: { type: 'client_token', key_prefix: token.slice(0, token.length - 24) }, request_id: paid.headers.get('x-request-id'), changes: { status: ['pending', 'finished'] } });
  t.same((await api.db('events').where({ object_id: intent.body.id })).map((e: { trigger: string; value: unknown }) => [e.trigger, e.value]), [['intent:status', 'finished']]);
  const again = await api.request('POST', '/transactions', { key: token, json: { type: 'payment', amount: 7, payment_method: CARD } });
  t.equal(again.status, 403, 'one use');
  t.equal((await auditOf(intent.body.id)).length, 1, 'a refused second use changes nothing');
});

t.test('an invoice recomputes through its family\'s update: the totals, a percentage charge\'s share, and an allocation the bank\'s rejection releases, each audited once by the door\'s statement', async (t) => {
  const made = await api.request('POST', '/invoices', { json: { due_date: '2026-11-23', customer_id: customer.id, items: [{ amount: 10 }] } });
  t.equal(made.status, 200, JSON.stringify(made.body));
  const invoice = made.body.id;
  const tax = await api.request('POST', '/line_items', { json: { invoice_id: invoice, amount: 10, amount_type: 'percentage' } });
  t.equal(tax.status, 200, JSON.stringify(tax.body));
  const more = await api.request('POST', '/line_items', { json: { invoice_id: invoice, amount: 20 } });
  t.equal(more.status, 200, JSON.stringify(more.body));
  t.equal((await api.request('GET', `/line_items/${tax.body.id}`)).body.total, 3, 'the percentage charge follows the number charges');
  t.match((await api.request('GET', `/invoices/${invoice}`)).body, { status: 'unpaid', total_due: 33, amount_due: 33 });
  const taxAudit = await auditOf(tax.body.id);
  t.same(taxAudit.map((e) => [e.depth, e.data.changes.total]), [[BY_STATEMENT, [100, 300]]], 'the share\'s change (in minor units, as the audit stores an item\'s total), by the door\'s statement');
  t.match(taxAudit[0].data.actor, { type: 'secret_key' });
  const recomputed = await auditOf(invoice);
  t.ok(recomputed.length >= 2, 'a recompute for each item added');
  t.same(recomputed.map((e) => e.depth), recomputed.map(() => BY_STATEMENT), 'each by the door\'s statement');

  const paid = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 13, customer_id: customer.id, payment_method: BANK, allocations: [{ invoice_id: invoice }] } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  t.match((await api.request('GET', `/invoices/${invoice}`)).body, { status: 'partially_paid', amount_due: 20, total_paid: 13 });
  const [allocation] = (await api.request('GET', `/line_items?invoice_id=${invoice}&entry_type=payment`)).body.values;
  await runTask('bank_reject', { transaction_id: paid.body.id });
  t.match((await api.request('GET', `/invoices/${invoice}`)).body, { status: 'unpaid', amount_due: 33, total_paid: 0, paid_timestamp: null }, 'the rejected payment no longer pays it');
  t.same((await api.request('GET', `/line_items?invoice_id=${invoice}&entry_type=payment`)).body.values, [], 'its allocation is released');
  const released = await auditOf(allocation.id);
  t.same(released.map((e) => [e.depth, e.data.action, e.data.actor]), [[BY_STATEMENT, 'delete', { type: 'system', name: 'bank_reject' }]]);
  const last = (await auditOf(invoice)).at(-1)!;
  t.match(last, { depth: BY_STATEMENT, data: { actor: { type: 'system', name: 'bank_reject' }, changes: { status: ['partially_paid', 'unpaid'] } } });
});

/** A processing account funded with no delay (its style `settings`), with a bank account as its funding method, and a payment to it. */
async function fundedShop(settings: Record<string, unknown>): Promise<{ accountId: string; paymentIds: string[] }> {
  const account = await api.request('POST', '/processing_accounts', { json: { name: 'Shop', funding_delay: 0, ...settings, payment_methods: [BANK] } });
  if (account.status !== 200) throw new Error(JSON.stringify(account.body));
  const paymentIds: string[] = [];
  for (const amount of [10, 20]) {
    const paid = await api.request('POST', '/transactions', { json: { type: 'payment', amount, customer_id: customer.id, processing_id: account.body.id, payment_method: CARD } });
    if (paid.status !== 200) throw new Error(JSON.stringify(paid.body));
    paymentIds.push(paid.body.id);
  }
  return { accountId: account.body.id, paymentIds };
}

/** The audit events of a transaction that change its funding_status: [writer, action, actor, change]. */
async function fundingAuditOf(id: string): Promise<unknown[][]> {
  return (await auditOf(id)).filter((e) => 'funding_status' in (e.data.changes ?? {})).map((e) => [e.depth, e.data.action, e.data.actor, e.data.changes]);
}

t.test('the funding run funds each due payment through the family\'s update: one audit event each, by the door\'s statement, as the job', async (t) => {
  const { paymentIds } = await fundedShop({});
  await runTask('funding_day', {});
  for (const id of paymentIds) {
    t.equal((await api.request('GET', `/transactions/${id}`)).body.funding_status, 'funded');
    t.same(await fundingAuditOf(id), [[BY_STATEMENT, 'update', { type: 'system', name: 'funding_day' }, { funding_status: ['pending', 'funded'] }]], id);
  }
  await runTask('funding_day', {});
  for (const id of paymentIds) t.equal((await fundingAuditOf(id)).length, 1, 'a second run finds nothing due');
});

t.test('a deposit the bank refuses holds what it paid out again through the family\'s update: an audit event each, as the job, beside the deposit\'s own', async (t) => {
  const { accountId, paymentIds } = await fundedShop({ funding_style: 'manual' });
  await runTask('funding_day', {});
  const deposit = await api.request('POST', '/transactions', { json: { type: 'deposit', processing_id: accountId } });
  t.equal(deposit.status, 200, JSON.stringify(deposit.body));
  const actor = (await fundingAuditOf(paymentIds[0]))[1][2];
  for (const id of paymentIds) {
    t.same(await fundingAuditOf(id), [
      [BY_STATEMENT, 'update', { type: 'system', name: 'funding_day' }, { funding_status: ['pending', 'held'] }],
      [BY_STATEMENT, 'update', actor, { funding_status: ['held', 'funded'] }],
    ], `${id}: cleared and held by the run, funded by the requested deposit`);
  }
  t.match(actor, { type: 'secret_key' }, 'the deposit\'s request');
  await runTask('bank_reject', { transaction_id: deposit.body.id });
  t.equal((await api.request('GET', `/transactions/${deposit.body.id}`)).body.status, 'rejected');
  for (const id of paymentIds) {
    t.equal((await api.request('GET', `/transactions/${id}`)).body.funding_status, 'held');
    t.same((await fundingAuditOf(id)).at(-1), [BY_STATEMENT, 'update', { type: 'system', name: 'bank_reject' }, { funding_status: ['funded', 'held'] }], `${id} held again`);
  }
  const unfunded = await api.db.raw(`select count(*)::int as n from ledger_entries where posting = ?`, [`unfund:${deposit.body.id}`]);
  t.ok(unfunded.rows[0].n > 0, 'the ledger gives the money back (unfund: legs)');
});

t.test('a method that becomes the account\'s default takes it from the previous one through the family\'s update: an audit event on the previous default naming the removed default, as the request', async (t) => {
  const payer = (await api.request('POST', '/customers', { json: { name: 'Two cards' } })).body;
  const method = (json: Record<string, unknown>) => api.request('POST', '/payment_methods', { version: 'v2', json: { account_id: payer.id, ...CARD, ...json } });
  const first = await method({ account_defaults: { paying: 'all' } });
  t.equal(first.status, 200, JSON.stringify(first.body));
  const second = await method({ account_defaults: { paying: 'all' } });
  t.equal(second.status, 200, JSON.stringify(second.body));
  t.same((await api.request('GET', `/payment_methods/${first.body.id}`, { version: 'v2' })).body.account_defaults?.paying ?? null, null);
  const audit = await auditOf(first.body.id);
  t.same(audit.map((e) => [e.depth, e.data.action, e.data.changes]), [[BY_STATEMENT, 'update', AUDITED_DEFAULT_TAKEN]], 'the removed default, named by the door\'s statement');
  t.match(audit[0].data, { actor: { type: 'secret_key' }, request_id: second.headers.get('x-request-id') });
  const pointer = (await auditOf(payer.id)).map((e) => e.data.changes.default_payment_method);
  t.same(pointer, [[null, first.body.id], [first.body.id, second.body.id]], 'the customer\'s pointer moves once, to the new default');
});

t.test('no database function changes or deletes a family\'s rows beside the door, but those listed with why (test/unit/table-writers.json `functions`)', async (t) => {
  const listed = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'unit', 'table-writers.json'), 'utf8')).functions as Record<string, Record<string, string>>;
  const tables = [...new Set(families.map((family) => family.table))];
  const found = (await api.db.raw(`select distinct lower(m[2]) as "table", p.proname as function
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace,
           regexp_matches(p.prosrc, '\\m(update|delete\\s+from)\\s+(' || ? || ')\\M', 'gi') as m
     where n.nspname = current_schema() order by 1, 2`, [tables.join('|')])).rows;
  t.same(found, Object.entries(listed).flatMap(([table, functions]) => Object.keys(functions).sort().map((name) => ({ table, function: name }))).sort((a, b) => a.table.localeCompare(b.table)));
});
