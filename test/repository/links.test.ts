/**
 * Repository tier: the link tables' SQL (api/families/intents/repository.ts) against a real
 * database, each test in a transaction rolled back at its end. A page finds a link by its id
 * alone; everything else names the tenant.
 */
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import { insertObjects } from '../../api/db/objects.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { findIntentIdByTokenHash, findLinkById, lockLink } from '../../api/families/intents/repository.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };

async function seed(tx: Db): Promise<void> {
  const now = new Date();
  await insertObjects(tx, 'intents', acme, [
    { id: 'int_link', type: 'checkout_link', created_at: now, modified_at: now, data: { status: 'active' } },
    { id: 'int_element', type: 'payment_method_form', created_at: now, modified_at: now, data: { status: 'active', token_hash: 'abc123' } },
  ]);
  await insertObjects(tx, 'intents', globex, [{ id: 'int_globex', type: 'payment_method_form', created_at: now, modified_at: now, data: { token_hash: 'def456' } }]);
}

t.test('a page finds a link by its id alone, with its tenant', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.match(await findLinkById(tx, 'intents', 'int_link'), { org_id: 'org_acme', environment: 'test', type: 'checkout_link', data: { status: 'active' } });
    t.equal(await findLinkById(tx, 'intents', 'int_nope'), null);
  });
});

t.test('a link is locked only through its own tenant', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.equal(await lockLink(tx, 'intents', globex, 'int_link'), null, 'another tenant cannot lock it');
    t.equal((await lockLink(tx, 'intents', acme, 'int_link'))?.id, 'int_link');
  });
});

t.test('the element intent behind a client token is found by the token hash within the tenant', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    t.equal(await findIntentIdByTokenHash(tx, acme, 'abc123'), 'int_element');
    t.equal(await findIntentIdByTokenHash(tx, acme, 'def456'), null, 'not another tenant\'s');
  });
});
