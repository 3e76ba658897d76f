/**
 * Repository tier: payment method SQL beyond the generic operations
 * (api/families/payment_methods/repository.ts) against a real database, each test in a transaction
 * rolled back at its end.
 */
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import { insertObjects } from '../../api/db/objects.ts';
import type { StoredObject } from '../../api/db/storedRow.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { accountExists, lockOtherDefaults, methodsInsert } from '../../api/families/payment_methods/repository.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };

function row(id: string, type: string, data: Record<string, unknown>): StoredObject {
  return { id, type, created_at: new Date(), modified_at: new Date(), data };
}

const method = (id: string, accountId: string, defaults: Record<string, boolean>) => row(id, 'card', { account_id: accountId, account_defaults: defaults });

async function dataOf(tx: Db, table: string, id: string): Promise<Record<string, unknown>> {
  return (await tx.raw(`select data from ${table} where id = ?`, [id])).rows[0].data;
}

t.test('an account exists only in its own tenant', async (t) => {
  await withRollback(db, async (tx) => {
    await insertObjects(tx, 'accounts', acme, [row('acct_a', 'customer', { name: 'A' })]);
    t.equal(await accountExists(tx, acme, 'acct_a'), true);
    t.equal(await accountExists(tx, globex, 'acct_a'), false);
  });
});

t.test('a method that becomes the default takes it from the account\'s other methods only: those are locked and read for the family\'s update', async (t) => {
  await withRollback(db, async (tx) => {
    await insertObjects(tx, 'payment_methods', acme, [
      method('pm_old', 'acct_a', { paying: true, funding: true }),
      method('pm_new', 'acct_a', { paying: true }),
      method('pm_other_account', 'acct_b', { paying: true }),
    ]);
    await insertObjects(tx, 'payment_methods', globex, [method('pm_globex', 'acct_a', { paying: true })]);
    const others = await lockOtherDefaults(tx, acme, 'acct_a', 'paying', 'pm_new');
    t.same(others.map((m) => m.id), ['pm_old'], 'not the kept method, not another account\'s, not another tenant\'s');
    t.same(others[0].data.account_defaults, { paying: true, funding: true }, 'read whole, for the family\'s update');
  });
});

t.test('the method insert another statement composes stores each method in its own tenant, as sent', async (t) => {
  await withRollback(db, async (tx) => {
    const insert = methodsInsert([
      { tenant: acme, row: method('pm_in_acme', 'acct_a', {}), audit: null },
      { tenant: globex, row: method('pm_in_globex', 'acct_g', {}), audit: null },
    ]);
    const stored = (await tx.raw(`with ${insert.ctes} select id from method order by id`, insert.bindings)).rows.map((r: { id: string }) => r.id);
    t.same(stored, ['pm_in_acme', 'pm_in_globex']);
    const found = (await tx.raw(`select id, org_id, type, data->>'account_id' as account from payment_methods where id like 'pm_in_%' order by id`)).rows;
    t.same(found, [{ id: 'pm_in_acme', org_id: 'org_acme', type: 'card', account: 'acct_a' }, { id: 'pm_in_globex', org_id: 'org_globex', type: 'card', account: 'acct_g' }]);
  });
});
