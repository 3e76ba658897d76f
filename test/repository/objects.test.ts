/**
 * Repository tier: the generic family SQL of api/db/objects.ts on the `accounts` table, each test
 * in a transaction rolled back at its end. Every read names its tenant; a client's condition is
 * added inside it, never around it.
 */
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import { aggregateObjects, countObjects, insertObjects, lockObjectsByIds, selectObjectById, selectObjects } from '../../api/db/objects.ts';
import type { StoredObject } from '../../api/db/storedRow.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const acmeLive: Tenant = { orgId: 'org_acme', environment: 'live' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };

function customer(id: string, data: Record<string, unknown> = {}): StoredObject {
  const now = new Date();
  return { id, type: 'customer', created_at: now, modified_at: now, data: { name: id, ...data } };
}

async function seed(tx: Db): Promise<void> {
  await insertObjects(tx, 'accounts', acme, [customer('acct_a1', { balance: 5 }), customer('acct_a2', { balance: 7 }), { ...customer('acct_a3'), type: 'processing' }]);
  await insertObjects(tx, 'accounts', acmeLive, [customer('acct_live', { balance: 100 })]);
  await insertObjects(tx, 'accounts', globex, [customer('acct_g1', { balance: 1000 })]);
}

const all = { where: null, orderBy: [], limit: 100, offset: 0 };

t.test('insertObjects stores the rows under the tenant and answers them in the order given', async (t) => {
  await withRollback(db, async (tx) => {
    const inserted = await insertObjects(tx, 'accounts', acme, [customer('acct_z'), customer('acct_b')]);
    t.same(inserted.map((row) => row.id), ['acct_z', 'acct_b']);
    const stored = (await tx.raw('select id, org_id, environment from accounts order by id')).rows;
    t.same(stored, [{ id: 'acct_b', org_id: 'org_acme', environment: 'test' }, { id: 'acct_z', org_id: 'org_acme', environment: 'test' }]);
  });
});

t.test('a lookup by id finds only its own tenant\'s row, of the type asked', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.equal((await selectObjectById(tx, 'accounts', acme, 'acct_a1'))?.data.name, 'acct_a1');
    t.equal(await selectObjectById(tx, 'accounts', globex, 'acct_a1'), null, 'not another org\'s');
    t.equal(await selectObjectById(tx, 'accounts', acmeLive, 'acct_a1'), null, 'not the other environment\'s');
    t.equal(await selectObjectById(tx, 'accounts', acme, 'acct_a3', { type: 'customer' }), null, 'not a row of another type');
  });
});

t.test('a list scans the tenant only, ordered by creation then id, and the client\'s condition stays inside the tenant', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.same((await selectObjects(tx, 'accounts', acme, all)).map((row) => row.id), ['acct_a1', 'acct_a2', 'acct_a3'], 'same creation time: by id');
    t.same((await selectObjects(tx, 'accounts', acme, { ...all, type: 'customer' })).map((row) => row.id), ['acct_a1', 'acct_a2']);
    const widening = { sql: "true or data->>'name' is not null", bindings: [] };
    t.same((await selectObjects(tx, 'accounts', acme, { ...all, where: widening })).map((row) => row.id), ['acct_a1', 'acct_a2', 'acct_a3'], 'an `or` cannot reach other tenants');
    t.same((await selectObjects(tx, 'accounts', acme, { ...all, limit: 1, offset: 1 })).map((row) => row.id), ['acct_a2'], 'limit and offset');
  });
});

t.test('a count stops at its ceiling', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.equal(await countObjects(tx, 'accounts', acme, { where: null }, 100), 3);
    t.equal(await countObjects(tx, 'accounts', acme, { where: null }, 2), 2);
  });
});

t.test('an aggregate covers the tenant\'s rows only', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    const [row] = await aggregateObjects(tx, 'accounts', acme, {
      select: [{ sql: "sum((data->>'balance')::int)", bindings: [] }, { sql: 'count(*)', bindings: [] }], where: null, type: 'customer', groupBy: [], orderBy: [], limit: 10, offset: 0,
    });
    t.same([Number(row.c0), Number(row.c1)], [12, 2]);
  });
});

t.test('locking by ids returns the tenant\'s rows among them, in id order', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    const locked = await lockObjectsByIds(tx, 'accounts', acme, ['acct_g1', 'acct_a2', 'acct_live', 'acct_a1']);
    t.same(locked.map((row) => row.id), ['acct_a1', 'acct_a2']);
  });
});

t.test('nothing is left behind', async (t) => {
  await withRollback(db, seed);
  t.equal(Number((await db.raw('select count(*) as n from accounts')).rows[0].n), 0);
});
