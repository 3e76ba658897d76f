/**
 * Repository tier: the account queries of api/families/accounts/repository.ts against a real
 * database, each test in a transaction rolled back at its end (test/helpers/rollback.ts).
 */
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import type { Tenant } from '../../api/engine/family.ts';
import { defaultProcessingAccount, findProcessingAccount, insertDefaultProcessingAccount } from '../../api/families/accounts/repository.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };
const acmeLive: Tenant = { orgId: 'org_acme', environment: 'live' };

async function insertAccount(tx: Db, tenant: Tenant, id: string, type: 'processing' | 'customer', createdAt: string): Promise<void> {
  await tx.raw('insert into accounts (id, org_id, environment, type, data, created_at) values (?, ?, ?, ?, ?::jsonb, ?)',
    [id, tenant.orgId, tenant.environment, type, JSON.stringify({ name: id }), createdAt]);
}

t.test('findProcessingAccount returns the tenant\'s own processing account', async (t) => {
  await withRollback(db, async (tx) => {
    await insertDefaultProcessingAccount(tx, acme, 'acct_acme', 'Acme');
    const found = await findProcessingAccount(tx, acme, 'acct_acme');
    t.equal(found?.id, 'acct_acme');
    t.equal(found?.data.name, 'Acme');
  });
});

t.test('findProcessingAccount does not return another org\'s account', async (t) => {
  await withRollback(db, async (tx) => {
    await insertDefaultProcessingAccount(tx, globex, 'acct_globex', 'Globex');
    t.equal(await findProcessingAccount(tx, acme, 'acct_globex'), null);
  });
});

t.test('findProcessingAccount does not return the same org\'s account of the other environment', async (t) => {
  await withRollback(db, async (tx) => {
    await insertDefaultProcessingAccount(tx, acmeLive, 'acct_acme_live', 'Acme live');
    t.equal(await findProcessingAccount(tx, acme, 'acct_acme_live'), null);
  });
});

t.test('findProcessingAccount does not return a customer account', async (t) => {
  await withRollback(db, async (tx) => {
    await insertAccount(tx, acme, 'acct_customer', 'customer', '2026-01-01T00:00:00Z');
    t.equal(await findProcessingAccount(tx, acme, 'acct_customer'), null);
  });
});

t.test('the default processing account is the tenant\'s first created, never another org\'s older one', async (t) => {
  await withRollback(db, async (tx) => {
    await insertAccount(tx, globex, 'acct_oldest_elsewhere', 'processing', '2025-01-01T00:00:00Z');
    await insertAccount(tx, acme, 'acct_second', 'processing', '2026-02-01T00:00:00Z');
    await insertAccount(tx, acme, 'acct_first', 'processing', '2026-01-01T00:00:00Z');
    t.equal((await defaultProcessingAccount(tx, acme))?.id, 'acct_first');
  });
});

t.test('a tenant without a processing account has no default', async (t) => {
  await withRollback(db, async (tx) => {
    await insertAccount(tx, acme, 'acct_only_customer', 'customer', '2026-01-01T00:00:00Z');
    t.equal(await defaultProcessingAccount(tx, acme), null);
  });
});

t.test('withRollback leaves nothing behind: the rows a test wrote are gone after it', async (t) => {
  await withRollback(db, (tx) => insertDefaultProcessingAccount(tx, acme, 'acct_rolled_back', 'Gone'));
  t.equal(await findProcessingAccount(db, acme, 'acct_rolled_back'), null);
  t.equal(Number((await db.raw('select count(*) as n from accounts')).rows[0].n), 0, 'no test of this file left a row');
});
