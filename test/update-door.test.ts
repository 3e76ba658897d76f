/**
 * Updates and deletes through the door (api/engine/operations.ts: update, changeRows, deleteRows)
 * are audited by the door's own statement (api/db/auditedChanges.ts), once per changed or deleted
 * row, with the event the audit trigger would have written; the trigger leaves that statement's
 * rows alone and still audits any other statement. A customer's change planned on the pool is
 * computed from the row it replaces: changes from many clients at once all apply, none lost. Which
 * of the two wrote an event is read from a test-only trigger on audit_events that notes its
 * trigger depth: 1 for the door's statement, 2 for the audit trigger inside it.
 */
import t from 'tap';
import { auditRows } from '../api/db/auditStatement.ts';
import { startTestApi } from './helpers/api.ts';
import { BY_STATEMENT, BY_TRIGGER, noteAuditWriters } from './helpers/auditWriters.ts';

const api = await startTestApi(t);
await noteAuditWriters(api.db);
const keyPrefix = api.key.slice(0, api.key.length - 24);

interface Written {
  data: Record<string, any>;
  depth: number;
}

async function eventsOf(objectId: string, action: string): Promise<Written[]> {
  return (await api.db.raw(`select a.data, w.depth from audit_events a left join test_audit_writers w on w.event_id = a.id
                             where a.data->>'object_id' = ? and a.data->>'action' = ? order by a.id`, [objectId, action])).rows;
}

async function newCustomer(name: string): Promise<string> {
  const made = await api.request('POST', '/customers', { json: { name, email: 'first@example.com', attrs: { plan: 'basic', api_secret: 'kept-out' } } });
  t.equal(made.status, 200, JSON.stringify(made.body));
  return made.body.id;
}

t.test('a customer\'s update is audited once, by its own statement, with the event the trigger writes', async (t) => {
  const made: Array<{ id: string; event: Written }> = [];
  for (const inStatement of [true, false]) {
    auditRows.inStatement = inStatement;
    try {
      const id = await newCustomer('Before');
      const changes = { name: 'After', email: 'second@example.com', attrs: { plan: 'gold', api_secret: 'still-out' } };
      const updated = await api.request('PUT', `/customers/${id}`, { json: changes, headers: { 'X-Request-Id': 'door-update' } });
      t.equal(updated.status, 200, JSON.stringify(updated.body));
      t.match(updated.body, { id, name: 'After', email: 'second@example.com' });
      const events = await eventsOf(id, 'update');
      t.equal(events.length, 1, 'one event');
      made.push({ id, event: events[0] });
    } finally {
      auditRows.inStatement = true;
    }
  }
  const [byStatement, byTrigger] = made;
  t.same([byStatement.event.depth, byTrigger.event.depth], [BY_STATEMENT, BY_TRIGGER]);
  const comparable = (m: typeof byStatement) => JSON.parse(JSON.stringify(m.event.data).replaceAll(m.id, 'CUS'));
  t.same(comparable(byStatement), comparable(byTrigger), 'one event whichever writes it');
  t.match(byStatement.event.data, { action: 'update', object_type: 'account', actor: { type: 'secret_key', key_prefix: keyPrefix }, request_id: 'door-update', ip: /127\.0\.0\.1/ });
  t.same(byStatement.event.data.changes, {
    name: ['Before', 'After'],
    email: ['first@example.com', 'second@example.com'],
    attrs: [{ plan: 'basic' }, { plan: 'gold' }],
    'attrs.api_secret': ['[redacted]', '[redacted]'],
  }, 'the changed fields, a secret-named one redacted');
});

t.test('an update that changes nothing writes no event', async (t) => {
  const id = await newCustomer('Same');
  const updated = await api.request('PUT', `/customers/${id}`, { json: { name: 'Same' } });
  t.equal(updated.status, 200);
  t.same(await eventsOf(id, 'update'), []);
});

t.test('changes of one customer from many clients at once all apply, each audited once from the row it replaced', async (t) => {
  const id = await newCustomer('Racing');
  const fields: Array<[string, Record<string, unknown>]> = [
    ['phone', { phone: '555-0100' }],
    ['address.address_line_1', { address: { address_line_1: '1 Main St' } }],
    ['address.address_line_2', { address: { address_line_2: 'Suite 2' } }],
    ['address.city', { address: { city: 'Springfield' } }],
    ['address.state_province', { address: { state_province: 'IL' } }],
    ['address.postal_code', { address: { postal_code: '62701' } }],
    ['address.country_code', { address: { country_code: 'US' } }],
  ];
  const answers = await Promise.all(fields.map(([, json], i) => api.request('PUT', `/customers/${id}`, { json, headers: { 'X-Request-Id': `race-${i}` } })));
  t.same(answers.map((a) => a.status), fields.map(() => 200));
  const stored = (await api.db.raw('select data from accounts where id = ?', [id])).rows[0].data;
  t.match(stored, { phone: '555-0100', address: { address_line_1: '1 Main St', address_line_2: 'Suite 2', city: 'Springfield', state_province: 'IL', postal_code: '62701', country_code: 'US' } }, 'every change is stored');
  const events = await eventsOf(id, 'update');
  t.equal(events.length, fields.length, 'one event a change');
  for (const [i, [field]] of fields.entries()) {
    const own = events.filter((e) => e.data.request_id === `race-${i}`);
    t.equal(own.length, 1, `${field}: one event`);
    const [top, part] = field.split('.');
    t.same(Object.keys(own[0].data.changes), [top], `${field}: one field changed`);
    const [before, after] = own[0].data.changes[top];
    const added = part ? Object.keys(after).filter((key) => after[key] !== before?.[key]) : [top];
    t.same(added, [part ?? top], `${field}: only its own part, over the parts the others set`);
    t.equal(own[0].depth, BY_STATEMENT, `${field}: by the statement`);
  }
});

t.test('a list update and a change in a transaction are audited by the door\'s statement too, and events are written once', async (t) => {
  const [a, b] = [await newCustomer('List A'), await newCustomer('List B')];
  const listed = await api.request('PUT', '/customers', { json: { object: 'list', values: [{ id: a, name: 'List A2' }, { id: b, name: 'List B2' }] } });
  t.equal(listed.status, 200, JSON.stringify(listed.body));
  for (const id of [a, b]) t.same((await eventsOf(id, 'update')).map((e) => [e.depth, e.data.changes.name]), [[BY_STATEMENT, [id === a ? 'List A' : 'List B', id === a ? 'List A2' : 'List B2']]]);

  const account = await api.request('POST', '/processing_accounts', { json: { name: 'Processing' } });
  t.equal(account.status, 200, JSON.stringify(account.body));
  const changed = await api.request('PUT', `/processing_accounts/${account.body.id}`, { json: { status: 'active' }, headers: { 'Idempotency-Key': 'door-processing' } });
  t.equal(changed.status, 200, JSON.stringify(changed.body));
  const events = await api.db('events').where({ object_id: account.body.id }).orderBy('seq');
  t.same(events.map((e: { value: Record<string, unknown> }) => e.value), ['pending', 'active'], 'one event for the change');
  const audit = await eventsOf(account.body.id, 'update');
  t.same(audit.map((e) => e.depth), [BY_STATEMENT]);
  t.match(audit[0].data.changes.processing, [{ status: 'pending' }, { status: 'active' }]);
  const replayed = await api.request('PUT', `/processing_accounts/${account.body.id}`, { json: { status: 'active' }, headers: { 'Idempotency-Key': 'door-processing' } });
  t.equal(replayed.headers.get('idempotent-replayed'), 'true', 'the idempotent response was stored with the change');
});

t.test('a delete is audited once, by the door\'s statement, with the row\'s fields', async (t) => {
  const id = await newCustomer('Leaving');
  const deleted = await api.request('DELETE', `/customers/${id}`, { headers: { 'X-Request-Id': 'door-delete' } });
  t.equal(deleted.status, 200, JSON.stringify(deleted.body));
  const events = await eventsOf(id, 'delete');
  t.same(events.map((e) => e.depth), [BY_STATEMENT]);
  t.match(events[0].data, { actor: { type: 'secret_key', key_prefix: keyPrefix }, request_id: 'door-delete', changes: { name: ['Leaving', null], email: ['first@example.com', null] } });
  t.notOk(JSON.stringify(events[0].data).includes('kept-out'), 'a secret-named field is dropped');
});

t.test('another statement\'s change is still the trigger\'s', async (t) => {
  const id = await newCustomer('Elsewhere');
  await api.db.raw(`update accounts set data = data || '{"name": "By SQL"}' where id = ?`, [id]);
  t.same((await eventsOf(id, 'update')).map((e) => [e.depth, e.data.changes.name]), [[BY_TRIGGER, ['Elsewhere', 'By SQL']]]);
});
