/**
 * Changes and deletes planned on the pool (api/engine/operations.ts: update, deleteById) for every
 * family that declares them plain: each is written by one statement that is the first of its
 * transaction to lock or write anything (`alone`: a test-only statement trigger on the family's
 * table notes that the transaction had no id yet, which the door's locking read in a transaction
 * gives it), with its audit event (tables the audit follows) and the outbox events it causes, which
 * commit with it: the same statement (the row version's and the event's command id) or not at all.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';
import { BY_STATEMENT, noteAuditWriters } from './helpers/auditWriters.ts';
import { noteFirstWrites, writesAlone as firstWrites } from './helpers/firstWrites.ts';
import { refuseWrite } from './helpers/refuseWrite.ts';

const api = await startTestApi(t);
await noteAuditWriters(api.db);
await noteFirstWrites(api.db, ['webhooks', 'accounts', 'payment_methods', 'invoices'], ['update', 'delete']);
const writesAlone = (table: string, op: 'update' | 'delete') => firstWrites(api.db, table, op);

async function auditOf(objectId: string, action: string): Promise<Array<{ data: Record<string, any>; depth: number }>> {
  return (await api.db.raw(`select a.data, w.depth from audit_events a join test_audit_writers w on w.event_id = a.id
                             where a.data->>'object_id' = ? and a.data->>'action' = ? order by a.id`, [objectId, action])).rows;
}

async function eventsOf(objectId: string): Promise<Array<{ trigger: string; value: unknown; written: string }>> {
  return (await api.db.raw('select trigger, value, xmin::text || \'/\' || cmin::text as written from events where object_id = ? order by seq', [objectId])).rows;
}

/** The transaction and command that wrote a row's version as stored. */
async function writtenBy(table: string, id: string): Promise<string> {
  return (await api.db.raw(`select xmin::text || '/' || cmin::text as written from ${table} where id = ?`, [id])).rows[0].written;
}

async function made(path: string, json: Record<string, unknown>): Promise<string> {
  const answer = await api.request('POST', path, { json });
  if (answer.status !== 200) throw new Error(`POST ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body.id;
}

const newWebhook = () => made('/webhooks', { trigger: 'processing_status', url: 'https://example.com/hook' });

/** Resolves once a backend of the test database waits for a lock (a write queued behind the test's own). */
async function someoneWaitsForALock(): Promise<void> {
  for (;;) {
    const waiting = await api.db.raw(`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`);
    if (waiting.rows.length > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

t.test('a webhook\'s status change is written alone, with its one event by the same statement', async (t) => {
  const id = await newWebhook();
  await writesAlone('webhooks', 'update');
  const changed = await api.request('PUT', `/webhooks/${id}`, { json: { status: 'disabled' } });
  t.equal(changed.status, 200);
  t.match(changed.body, { id, status: 'disabled', disabled_reason: /by request/ });
  t.same(await writesAlone('webhooks', 'update'), [true], 'one statement, its transaction\'s first write');
  const events = await eventsOf(id);
  t.same(events.map((e) => [e.trigger, e.value]), [['webhook:status', 'disabled']], 'one status event');
  t.equal(events[0].written, await writtenBy('webhooks', id), 'written by the statement that wrote the change');

  const url = await api.request('PUT', `/webhooks/${id}`, { json: { url: 'https://example.com/other' } });
  t.equal(url.status, 200);
  t.same(await writesAlone('webhooks', 'update'), [true], 'a change with no event: alone too');
  t.equal((await eventsOf(id)).length, 1, 'and no event');
});

t.test('changes of one webhook\'s fields from many clients at once all stand, its status event written once', async (t) => {
  const id = await newWebhook();
  const changes: Array<Record<string, unknown>> = [
    { url: 'https://example.com/raced' },
    { retries: 3 },
    { rate_limit: 50 },
    { reference_object: 'ref-1' },
    { status: 'disabled' },
    { status: 'disabled' },
  ];
  const answers = await Promise.all(changes.map((json) => api.request('PUT', `/webhooks/${id}`, { json })));
  t.same(answers.map((a) => a.status), changes.map(() => 200));
  const stored = (await api.db.raw('select data from webhooks where id = ?', [id])).rows[0].data;
  t.match(stored, { url: 'https://example.com/raced', retries: 3, rate_limit: 50, reference_object: 'ref-1', status: 'disabled' }, 'every change is stored');
  t.same((await eventsOf(id)).map((e) => e.value), ['disabled'], 'the status changed once: one event');
});

t.test('a status change whose webhook changed after it was read is written on the row as it is, its event only if the status still changes', async (t) => {
  const id = await newWebhook();
  const holder = await api.db.transaction();
  let open = true;
  try {
    await holder.raw('select 1 from webhooks where id = ? for update', [id]);
    const change = api.request('PUT', `/webhooks/${id}`, { json: { status: 'disabled', retries: 2 } });
    await someoneWaitsForALock();
    await holder.raw(`update webhooks set data = data || '{"status": "disabled"}' where id = ?`, [id]);
    await holder.commit();
    open = false;
    t.equal((await change).status, 200);
  } finally {
    if (open) await holder.rollback();
  }
  t.match((await api.db.raw('select data from webhooks where id = ?', [id])).rows[0].data, { status: 'disabled', retries: 2 });
  t.same(await eventsOf(id), [], 'already disabled when written: no event');
});

t.test('a change whose statement fails writes neither the change nor its event', async (t) => {
  const id = await newWebhook();
  await refuseWrite(api.db, t, 'webhooks', 'update', 'url', 'https://example.com/refused');
  const refused = await api.request('PUT', `/webhooks/${id}`, { json: { status: 'disabled', url: 'https://example.com/refused' } });
  t.ok(refused.status >= 400, `refused (${refused.status})`);
  t.match((await api.db.raw('select data from webhooks where id = ?', [id])).rows[0].data, { status: 'active', url: 'https://example.com/hook' });
  t.same(await eventsOf(id), [], 'no event');
});

t.test('a webhook\'s and a customer\'s delete are written alone, a customer\'s audited once by it', async (t) => {
  const webhook = await newWebhook();
  const customer = await made('/customers', { name: 'Leaving' });
  for (const [path, table, id] of [['/webhooks', 'webhooks', webhook], ['/customers', 'accounts', customer]]) {
    await writesAlone(table, 'delete');
    const deleted = await api.request('DELETE', `${path}/${id}`, { headers: { 'X-Request-Id': `pool-delete-${id}` } });
    t.equal(deleted.status, 200);
    t.equal(deleted.body.id, id, `${path}: answered with the deleted row`);
    t.same(await writesAlone(table, 'delete'), [true], `${path}: one statement, its transaction's first write`);
    t.equal((await api.request('GET', `${path}/${id}`)).status, 404, `${path}: gone`);
    t.equal((await api.request('DELETE', `${path}/${id}`)).status, 404, `${path}: a second delete finds none`);
  }
  const audit = await auditOf(customer, 'delete');
  t.same(audit.map((e) => e.depth), [BY_STATEMENT], 'the customer\'s: one audit event, by the statement');
  t.match(audit[0].data, { request_id: `pool-delete-${customer}`, changes: { name: ['Leaving', null] } });
});

t.test('a delete whose row changed after it was read deletes the row as it is and answers with it', async (t) => {
  const id = await made('/customers', { name: 'Read' });
  const holder = await api.db.transaction();
  let open = true;
  try {
    await holder.raw('select 1 from accounts where id = ? for update', [id]);
    const deleting = api.request('DELETE', `/customers/${id}`);
    await someoneWaitsForALock();
    await holder.raw(`update accounts set data = data || '{"name": "Renamed meanwhile"}' where id = ?`, [id]);
    await holder.commit();
    open = false;
    const deleted = await deleting;
    t.equal(deleted.status, 200);
    t.equal(deleted.body.name, 'Renamed meanwhile', 'answered with the row it deleted');
  } finally {
    if (open) await holder.rollback();
  }
  t.match((await auditOf(id, 'delete'))[0]?.data.changes, { name: ['Renamed meanwhile', null] }, 'audited as deleted');
});

t.test('a payment method\'s changes are written alone, all stand, and a security code given with one is never stored', async (t) => {
  const id = await made('/payment_methods', { type: 'card', card: { card_number: '4242424242424242', expiry: '12/35' } });
  const changes: Array<Record<string, unknown>> = [
    { account_holder: 'Pat Payer', card: { card_code: '123' } },
    { email: 'pat@example.com' },
    { billing_address: { city: 'Springfield' } },
    { attrs: { note: 'kept' } },
  ];
  await writesAlone('payment_methods', 'update');
  const answers = await Promise.all(changes.map((json) => api.request('PUT', `/payment_methods/${id}`, { json })));
  t.same(answers.map((a) => a.status), changes.map(() => 200));
  const stored = (await api.db.raw('select data from payment_methods where id = ?', [id])).rows[0].data;
  t.match(stored, { account_holder: 'Pat Payer', email: 'pat@example.com', billing_address: { city: 'Springfield' }, attrs: { note: 'kept' } }, 'every change is stored');
  t.notOk(JSON.stringify(stored).includes('card_code'), 'no security code stored');
  t.ok((await writesAlone('payment_methods', 'update')).every((alone) => alone), 'each statement its transaction\'s first write');
  const audit = await auditOf(id, 'update');
  t.same(audit.map((e) => e.depth), changes.map(() => BY_STATEMENT), 'each change audited once, by the statement');
  t.notOk(JSON.stringify(audit).includes('card_code'), 'nor audited');
});

t.test('an invoice\'s change is written alone; a status change runs in a transaction', async (t) => {
  const customer = await made('/customers', { name: 'Billed' });
  const id = await made('/invoices', { type: 'bill', due_date: '2026-11-23', customer_id: customer, items: [{ amount: 10 }] });
  await writesAlone('invoices', 'update');
  const described = await api.request('PUT', `/invoices/${id}`, { json: { description: 'Described', due_date: '2026-12-01' } });
  t.equal(described.status, 200);
  t.match(described.body, { description: 'Described', due_date: '2026-12-01', items: [{ amount: 10 }] }, 'answered with its items');
  t.same(await writesAlone('invoices', 'update'), [true]);
  const closed = await api.request('PUT', `/invoices/${id}`, { json: { status: 'closed' } });
  t.equal(closed.status, 200);
  t.same(await writesAlone('invoices', 'update'), [false], 'the status change: in a transaction, its row locked first');
  t.same((await auditOf(id, 'update')).map((e) => e.depth), [BY_STATEMENT, BY_STATEMENT]);
});
