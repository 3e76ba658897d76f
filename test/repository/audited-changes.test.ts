/**
 * Repository tier: the door's update and delete statements (api/db/auditedChanges.ts) on the
 * `accounts` table. A change is applied, field by field, to the row as the statement finds it
 * under its lock, so a change planned from a row read earlier loses none that landed meanwhile;
 * each written row has one audit event with its own item's actor, from the row it replaced, and
 * the table's trigger writes none for the statement; a row of another tenant is never touched.
 */
import t from 'tap';
import { auditRows } from '../../api/db/auditStatement.ts';
import { changesBetween, deleteAuditedRows, updateAuditedRows, type ChangedItem } from '../../api/db/auditedChanges.ts';
import { insertObjects, selectObjectById } from '../../api/db/objects.ts';
import type { StoredObject } from '../../api/db/storedRow.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };

function customer(id: string, data: Record<string, unknown> = {}): StoredObject {
  const now = new Date();
  return { id, type: 'customer', created_at: now, modified_at: now, data: { name: id, ...data } };
}

const actor = (requestId: string) => JSON.stringify({ actor: { type: 'secret_key', key_prefix: 'sk_test_x' }, request_id: requestId, ip: '127.0.0.1' });

async function auditOf(id: string, action: string): Promise<Array<Record<string, any>>> {
  return (await db.raw(`select data from audit_events where data->>'object_id' = ? and data->>'action' = ? order by id`, [id, action])).rows.map((r: { data: Record<string, any> }) => r.data);
}

t.test('a change planned from a row read before another change landed applies over it: both stand, each audited from the row it replaced', async (t) => {
  await insertObjects(db, 'accounts', acme, [customer('acct_race', { address: { city: 'Old' } })]);
  const read = (await selectObjectById(db, 'accounts', acme, 'acct_race'))!;
  await db.raw(`update accounts set data = data || '{"email": "other@example.com"}' || jsonb_build_object('address', data->'address' || '{"line": "1 Main"}') where id = 'acct_race'`);
  const mine = { ...read.data, name: 'Mine', address: { city: 'New' } };
  t.same(changesBetween(read.data, mine), [[['name'], 'Mine'], [['address', 'city'], 'New']], 'the change, field by field');
  const [written] = await updateAuditedRows(db, 'accounts', 'account', [{ tenant: acme, id: 'acct_race', changes: changesBetween(read.data, mine), audit: actor('mine') }]);
  const both = { name: 'Mine', email: 'other@example.com', address: { city: 'New', line: '1 Main' } };
  t.same(written?.data, both, 'answered as stored');
  t.same((await db.raw(`select data from accounts where id = 'acct_race'`)).rows[0].data, both, 'the other change stands');
  t.same((await auditOf('acct_race', 'update')).map((e) => [e.request_id, e.changes]), [
    [null, { email: [null, 'other@example.com'], address: [{ city: 'Old' }, { city: 'Old', line: '1 Main' }] }],
    ['mine', { name: ['acct_race', 'Mine'], address: [{ city: 'Old', line: '1 Main' }, { city: 'New', line: '1 Main' }] }],
  ], 'the other change\'s event (by the trigger), then this one\'s, from the row as it was then');
  t.same(changesBetween({ a: 1, b: { c: 2 }, gone: 'x' }, { a: 1, b: { c: 2, d: null }, list: [1] }), [[['gone']], [['b', 'd'], null], [['list'], [1]]], 'removed, set to null, added');
});

t.test('two changes planned from a row without an object, each making it with a field of its own: both fields stand', async (t) => {
  await insertObjects(db, 'accounts', acme, [customer('acct_make')]);
  const read = (await selectObjectById(db, 'accounts', acme, 'acct_make'))!;
  const city = changesBetween(read.data, { ...read.data, address: { city: 'Springfield' } });
  const state = changesBetween(read.data, { ...read.data, address: { state_province: 'IL' } });
  t.same(city, [[['address', 'city'], 'Springfield']], 'the object is made field by field');
  await updateAuditedRows(db, 'accounts', 'account', [{ tenant: acme, id: 'acct_make', changes: city, audit: actor('city') }]);
  await updateAuditedRows(db, 'accounts', 'account', [{ tenant: acme, id: 'acct_make', changes: state, audit: actor('state') }]);
  t.same((await db.raw(`select data from accounts where id = 'acct_make'`)).rows[0].data.address, { city: 'Springfield', state_province: 'IL' });
  t.same(changesBetween({}, { settings: {} }), [[['settings'], {}]], 'an empty object is set whole');
});

t.test('changes of one row in one group all apply, in order, each with its own event', async (t) => {
  await insertObjects(db, 'accounts', acme, [customer('acct_twice')]);
  const items: ChangedItem[] = [
    { tenant: acme, id: 'acct_twice', changes: [[['phone'], '555-0100']], audit: actor('first') },
    { tenant: acme, id: 'acct_twice', changes: [[['email'], 'e@example.com']], audit: actor('second') },
  ];
  const written = await updateAuditedRows(db, 'accounts', 'account', items);
  t.same(written.map((row) => row?.data), [{ name: 'acct_twice', phone: '555-0100' }, { name: 'acct_twice', phone: '555-0100', email: 'e@example.com' }]);
  t.same((await auditOf('acct_twice', 'update')).map((e) => [e.request_id, Object.keys(e.changes)]), [['first', ['phone']], ['second', ['email']]]);
});

t.test('a group of changes and deletes: each row audited once with its own actor, another tenant\'s row untouched', async (t) => {
  await insertObjects(db, 'accounts', acme, [customer('acct_g1'), customer('acct_g2')]);
  await insertObjects(db, 'accounts', globex, [customer('acct_g3')]);
  const items = ['acct_g2', 'acct_g1', 'acct_g3'].map((id, i): ChangedItem => ({ tenant: acme, id, changes: [[['name'], `${id} renamed`]], audit: actor(`group-${i}`) }));
  const written = await updateAuditedRows(db, 'accounts', 'account', items);
  t.same(written.map((row) => row?.id ?? null), ['acct_g2', 'acct_g1', null], 'answered in the order given; the other tenant\'s row is not found');
  t.equal((await db.raw(`select data->>'name' as name from accounts where id = 'acct_g3'`)).rows[0].name, 'acct_g3');
  for (const [i, id] of ['acct_g2', 'acct_g1'].entries()) {
    t.match(await auditOf(id, 'update'), [{ request_id: `group-${i}`, actor: { type: 'secret_key' }, changes: { name: [id, `${id} renamed`] } }], `${id}: one event, its own actor`);
  }
  t.same(await auditOf('acct_g3', 'update'), []);
  const deleted = await deleteAuditedRows(db, 'accounts', 'account', [{ tenant: acme, id: 'acct_g1', audit: actor('gone-1') }, { tenant: acme, id: 'acct_g2', audit: actor('gone-2') }, { tenant: acme, id: 'acct_g3', audit: actor('gone-3') }]);
  t.same(deleted.map((row) => row?.id ?? null), ['acct_g1', 'acct_g2', null]);
  t.match(await auditOf('acct_g1', 'delete'), [{ request_id: 'gone-1', changes: { name: ['acct_g1 renamed', null] } }]);
  t.match(await auditOf('acct_g2', 'delete'), [{ request_id: 'gone-2' }]);
  t.equal((await auditOf('acct_g2', 'delete')).length, 1, 'once');
  t.same(await auditOf('acct_g3', 'delete'), [], 'the other tenant\'s row is still there');
});

t.test('each change\'s event is the one the trigger writes: nested, removed, null, secret-named and trigger-set fields', async (t) => {
  const before = { email: 'a@example.com', phone: '555-0100', address: { city: 'Old', line: '1 Main' }, attrs: null, note: 'plain' };
  const cases: Array<[name: string, after: Record<string, unknown>]> = [
    ['a nested field', { ...before, address: { city: 'New', line: '1 Main' } }],
    ['a field removed', { ...before, phone: undefined }],
    ['an object where there was null', { ...before, attrs: { plan: 'gold' } }],
    ['a value that reads like a secret\'s name', { ...before, note: 'Hashimoto' }],
    ['a secret-named field', { ...before, attrs: { api_secret: 'new' } }],
    ['nothing', { ...before }],
  ];
  await withRollback(db, async (tx) => {
    for (const [name, after] of cases) {
      const written: Array<Array<Record<string, any>>> = [];
      for (const inStatement of [true, false]) {
        const id = `acct_case_${cases.findIndex(([n]) => n === name)}_${inStatement}`;
        await insertObjects(tx, 'accounts', acme, [customer(id, before)]);
        auditRows.inStatement = inStatement;
        try {
          await updateAuditedRows(tx, 'accounts', 'account', [{ tenant: acme, id, changes: changesBetween(before, after), audit: actor(name) }]);
        } finally {
          auditRows.inStatement = true;
        }
        written.push((await tx.raw(`select data from audit_events where data->>'object_id' = ? and data->>'action' = 'update'`, [id])).rows.map((r: { data: Record<string, any> }) => r.data));
      }
      const [byStatement, byTrigger] = written.map((events) => events.map((e) => ({ ...e, object_id: 'ACCT' })));
      t.same(byStatement, byTrigger, `${name}: the trigger's event`);
      t.equal(byStatement.length, name === 'nothing' ? 0 : 1, `${name}: ${name === 'nothing' ? 'no event' : 'one event'}`);
    }
    // A field the database sets on the way in is in the event too.
    await tx.raw(`create function test_stamp() returns trigger language plpgsql as $$ begin new.data := new.data || '{"stamped": true}'; return new; end $$`);
    await tx.raw('create trigger test_stamp before update on accounts for each row execute function test_stamp()');
    await insertObjects(tx, 'accounts', acme, [customer('acct_stamped', before)]);
    await updateAuditedRows(tx, 'accounts', 'account', [{ tenant: acme, id: 'acct_stamped', changes: [[['note'], 'changed']], audit: actor('stamped') }]);
    const [event] = (await tx.raw(`select data from audit_events where data->>'object_id' = 'acct_stamped' and data->>'action' = 'update'`)).rows;
    t.same(event.data.changes, { note: ['plain', 'changed'], stamped: [null, true] }, 'a field set by a BEFORE trigger');
  });
});
