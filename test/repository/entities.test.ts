/**
 * Repository tier: the entity and stakeholder SQL beyond the generic operations
 * (api/families/entities/repository.ts, api/families/stakeholders/repository.ts) against a real database, each test in a transaction rolled back at its end.
 */
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import { insertObjects } from '../../api/db/objects.ts';
import type { StoredObject } from '../../api/db/storedRow.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { accountBackedBy, entitiesByIds, findEntity, stakeholdersOf } from '../../api/families/entities/repository.ts';
import { lockEntity, otherOwnership } from '../../api/families/stakeholders/repository.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };

function row(id: string, type: string, data: Record<string, unknown>): StoredObject {
  return { id, type, created_at: new Date(), modified_at: new Date(), data };
}

const owner = (id: string, entityId: string, percentage: unknown) =>
  row(id, 'stakeholder', { entity_id: entityId, association: { ownership: { percentage } } });

async function seed(tx: Db): Promise<void> {
  await insertObjects(tx, 'entities', acme, [row('ent_a', 'business', { legal_name: 'Acme' }), row('ent_b', 'business', { legal_name: 'Acme Two' })]);
  await insertObjects(tx, 'entities', globex, [row('ent_g', 'business', { legal_name: 'Globex' })]);
  await insertObjects(tx, 'stakeholders', acme, [owner('stk_1', 'ent_a', 30), owner('stk_2', 'ent_a', 45.5), owner('stk_3', 'ent_a', 'ten'), owner('stk_4', 'ent_b', 10)]);
  await insertObjects(tx, 'stakeholders', globex, [owner('stk_g', 'ent_a', 99)]);
}

t.test('entities are found by id only in their own tenant', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.equal((await findEntity(tx, acme, 'ent_a'))?.data.legal_name, 'Acme');
    t.equal(await findEntity(tx, acme, 'ent_g'), null);
    t.same((await entitiesByIds(tx, acme, ['ent_a', 'ent_g', 'ent_b'])).map((e) => e.id).sort(), ['ent_a', 'ent_b']);
    t.same(await entitiesByIds(tx, acme, []), []);
  });
});

t.test('an entity\'s stakeholders are its tenant\'s, oldest first', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.same((await stakeholdersOf(tx, acme, ['ent_a'])).map((s) => s.id), ['stk_1', 'stk_2', 'stk_3'], 'not globex\'s stakeholder naming the same entity id');
    t.same((await stakeholdersOf(tx, acme, ['ent_a', 'ent_b'])).map((s) => s.id), ['stk_1', 'stk_2', 'stk_3', 'stk_4']);
    t.same((await stakeholdersOf(tx, globex, ['ent_a'])).map((s) => s.id), ['stk_g'], 'another tenant\'s, to its own tenant only');
  });
});

t.test('ownership of the other stakeholders sums the numeric percentages only', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.equal(await otherOwnership(tx, acme, 'ent_a', 'stk_1'), 45.5, 'the one excepted and a text percentage do not count');
    t.equal(await otherOwnership(tx, acme, 'ent_b', 'stk_4'), 0);
  });
});

t.test('a stakeholder locks its entity in its own tenant only', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.equal((await lockEntity(tx, acme, 'ent_a'))?.id, 'ent_a');
    t.equal(await lockEntity(tx, { orgId: 'org_other', environment: 'test' }, 'ent_a'), null, 'not another tenant\'s');
  });
});

t.test('an account backed by an entity is found in the tenant only', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    await insertObjects(tx, 'accounts', globex, [row('acct_g', 'customer', { name: 'G', entity_id: 'ent_b' })]);
    t.equal(await accountBackedBy(tx, acme, ['ent_b']), null);
    await insertObjects(tx, 'accounts', acme, [row('acct_a', 'customer', { name: 'A', entity_id: 'ent_b' })]);
    t.same(await accountBackedBy(tx, acme, ['ent_a', 'ent_b']), { id: 'acct_a', entity_id: 'ent_b' });
  });
});
