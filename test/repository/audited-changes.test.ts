/**
 * Repository tier: the door's update and delete statements (api/db/auditedChanges.ts) on the
 * `accounts` table. A change read without its lock is written only over the version it was
 * computed from; each written row has one audit event with its own item's actor, and the table's
 * trigger writes none for the statement; a row of another tenant is never touched.
 */
import t from 'tap';
import { deleteAuditedRows, selectVersioned, updateAuditedRows, type ChangedItem } from '../../api/db/auditedChanges.ts';
import { insertObjects } from '../../api/db/objects.ts';
import type { StoredObject } from '../../api/db/storedRow.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { repositoryDatabase } from '../helpers/rollback.ts';

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

t.test('a change computed from a version another change replaced is not written, and leaves no event', async (t) => {
  await insertObjects(db, 'accounts', acme, [customer('acct_race')]);
  const read = (await selectVersioned(db, 'accounts', acme, 'acct_race'))!;
  await db.raw(`update accounts set data = data || '{"email": "other@example.com"}' where id = 'acct_race'`);
  const stale: ChangedItem = { tenant: acme, next: { ...read.row, data: { ...read.row.data, name: 'Mine' } }, version: read.version, audit: actor('stale') };
  t.same(await updateAuditedRows(db, 'accounts', 'account', [stale]), [null], 'answered null');
  const stored = (await db.raw(`select data from accounts where id = 'acct_race'`)).rows[0].data;
  t.same(stored, { name: 'acct_race', email: 'other@example.com' }, 'the other change stands');
  t.same((await auditOf('acct_race', 'update')).map((e) => e.request_id), [null], 'only the other change\'s event (by the trigger)');

  const again = (await selectVersioned(db, 'accounts', acme, 'acct_race'))!;
  const [written] = await updateAuditedRows(db, 'accounts', 'account', [{ ...stale, next: { ...again.row, data: { ...again.row.data, name: 'Mine' } }, version: again.version }]);
  t.match(written, { id: 'acct_race', data: { name: 'Mine', email: 'other@example.com' } }, 'planned again from the row as it is, it is written');
  t.same((await auditOf('acct_race', 'update')).map((e) => [e.request_id, e.changes]), [[null, { email: [null, 'other@example.com'] }], ['stale', { name: ['acct_race', 'Mine'] }]]);
  t.same(await deleteAuditedRows(db, 'accounts', 'account', [{ tenant: acme, id: 'acct_race', version: again.version, audit: actor('late') }]), [null], 'a delete at a replaced version is not written either');
});

t.test('a group of changes and deletes: each row audited once with its own actor, another tenant\'s row untouched', async (t) => {
  await insertObjects(db, 'accounts', acme, [customer('acct_g1'), customer('acct_g2')]);
  await insertObjects(db, 'accounts', globex, [customer('acct_g3')]);
  const items = ['acct_g2', 'acct_g1', 'acct_g3'].map((id, i): ChangedItem => ({ tenant: acme, next: customer(id, { name: `${id} renamed` }), version: null, audit: actor(`group-${i}`) }));
  const written = await updateAuditedRows(db, 'accounts', 'account', items);
  t.same(written.map((row) => row?.id ?? null), ['acct_g2', 'acct_g1', null], 'answered in the order given; the other tenant\'s row is not found');
  t.equal((await db.raw(`select data->>'name' as name from accounts where id = 'acct_g3'`)).rows[0].name, 'acct_g3');
  for (const [i, id] of ['acct_g2', 'acct_g1'].entries()) {
    t.match(await auditOf(id, 'update'), [{ request_id: `group-${i}`, actor: { type: 'secret_key' }, changes: { name: [id, `${id} renamed`] } }], `${id}: one event, its own actor`);
  }
  t.same(await auditOf('acct_g3', 'update'), []);
  const deleted = await deleteAuditedRows(db, 'accounts', 'account', [{ tenant: acme, id: 'acct_g1', version: null, audit: actor('gone-1') }, { tenant: acme, id: 'acct_g2', version: null, audit: actor('gone-2') }]);
  t.same(deleted.map((row) => row?.id), ['acct_g1', 'acct_g2']);
  t.match(await auditOf('acct_g1', 'delete'), [{ request_id: 'gone-1', changes: { name: ['acct_g1 renamed', null] } }]);
  t.match(await auditOf('acct_g2', 'delete'), [{ request_id: 'gone-2' }]);
  t.equal((await auditOf('acct_g2', 'delete')).length, 1, 'once');
});
