/**
 * Repository tier: the account queries of api/families/accounts/repository.ts against a real
 * database, each test in a transaction rolled back at its end (test/helpers/rollback.ts).
 */
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import type { Tenant } from '../../api/engine/family.ts';
import { openDefaultProcessingAccount } from '../../api/families/accounts/defaultAccount.ts';
import '../../api/families/index.ts';
import { followPayingDefault } from '../../api/families/accounts/payingPointer.ts';
import { defaultProcessingAccount, findProcessingAccount, lockPayingCandidates } from '../../api/families/accounts/repository.ts';
import { createDomainServices } from '../../api/domain.ts';
import { loadConfig } from '../../api/config.ts';
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
    await insertAccount(tx, acme, 'acct_acme', 'processing', '2026-01-01T00:00:00Z');
    const found = await findProcessingAccount(tx, acme, 'acct_acme');
    t.equal(found?.id, 'acct_acme');
    t.equal(found?.data.name, 'acct_acme');
  });
});

t.test('findProcessingAccount does not return another org\'s account', async (t) => {
  await withRollback(db, async (tx) => {
    await insertAccount(tx, globex, 'acct_globex', 'processing', '2026-01-01T00:00:00Z');
    t.equal(await findProcessingAccount(tx, acme, 'acct_globex'), null);
  });
});

t.test('findProcessingAccount does not return the same org\'s account of the other environment', async (t) => {
  await withRollback(db, async (tx) => {
    await insertAccount(tx, acmeLive, 'acct_acme_live', 'processing', '2026-01-01T00:00:00Z');
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

t.test('openDefaultProcessingAccount writes an active processing account with its audit event as the system and its processing_status event', async (t) => {
  const domain = createDomainServices(loadConfig());
  await withRollback(db, async (tx) => {
    const made = await openDefaultProcessingAccount({ tx, tenant: acme, version: 'v1', principal: { kind: 'secret', keyId: 'test', settings: {} }, domain }, 'Acme');
    t.equal((await defaultProcessingAccount(tx, acme))?.id, made.id, 'the environment\'s default');
    t.match(made.data, { name: 'Acme', processing: { status: 'active', funding: { style: 'netted', delay: 2 } }, keep_active: true });
    const [audit] = (await tx.raw(`select data from audit_events where data->>'object_id' = ?`, [made.id])).rows;
    t.match(audit.data, { action: 'create', actor: { type: 'system', name: 'default_processing_account' } });
    const events = (await tx.raw(`select trigger, value from events where object_id = ?`, [made.id])).rows;
    t.match(events, [{ trigger: 'processing_status', value: 'active' }]);
  });
});

async function insertMethod(tx: Db, tenant: Tenant, id: string, accountId: string, paying?: string): Promise<void> {
  await tx.raw('insert into payment_methods (id, org_id, environment, type, data) values (?, ?, ?, ?, ?::jsonb)',
    [id, tenant.orgId, tenant.environment, 'card', JSON.stringify({ account_id: accountId, account_defaults: paying ? { paying } : {} })]);
}

t.test('the paying default\'s candidates are the account\'s methods holding it and the one named, in its tenant only', async (t) => {
  await withRollback(db, async (tx) => {
    await insertMethod(tx, acme, 'pm_holds', 'acct_a', 'all');
    await insertMethod(tx, acme, 'pm_named', 'acct_a');
    await insertMethod(tx, acme, 'pm_plain', 'acct_a');
    await insertMethod(tx, acme, 'pm_other_account', 'acct_b', 'all');
    await insertMethod(tx, globex, 'pm_globex', 'acct_a', 'all');
    t.same((await lockPayingCandidates(tx, acme, 'acct_a', 'pm_named')).map((m) => m.id), ['pm_holds', 'pm_named']);
    t.same((await lockPayingCandidates(tx, acme, 'acct_a', null)).map((m) => m.id), ['pm_holds']);
  });
});

t.test('a customer\'s pointer to a method that gave up its paying default is cleared through the account family, audited; another pointer stays', async (t) => {
  const domain = createDomainServices(loadConfig());
  await withRollback(db, async (tx) => {
    const ctx = { tx, tenant: acme, version: 'v1' as const, principal: { kind: 'secret' as const, keyId: 'test', settings: {} }, domain };
    await tx.raw(`insert into accounts (id, org_id, environment, type, data) values
      ('acct_points', 'org_acme', 'test', 'customer', '{"name": "A", "default_payment_method": "pm_gone"}'),
      ('acct_elsewhere', 'org_acme', 'test', 'customer', '{"name": "B", "default_payment_method": "pm_kept"}')`);
    await followPayingDefault(ctx, 'acct_points', null, 'pm_gone');
    await followPayingDefault(ctx, 'acct_elsewhere', null, 'pm_gone');
    const data = async (id: string) => (await tx.raw('select data from accounts where id = ?', [id])).rows[0].data;
    t.notOk('default_payment_method' in await data('acct_points'));
    t.equal((await data('acct_elsewhere')).default_payment_method, 'pm_kept');
    const audits = (await tx.raw(`select data->>'object_id' as id, data->>'action' as action from audit_events where data->>'object_id' in ('acct_points', 'acct_elsewhere') and data->>'action' <> 'create'`)).rows;
    t.same(audits, [{ id: 'acct_points', action: 'update' }]);
  });
});

t.test('withRollback leaves nothing behind: the rows a test wrote are gone after it', async (t) => {
  await withRollback(db, (tx) => insertAccount(tx, acme, 'acct_rolled_back', 'processing', '2026-01-01T00:00:00Z'));
  t.equal(await findProcessingAccount(db, acme, 'acct_rolled_back'), null);
  t.equal(Number((await db.raw('select count(*) as n from accounts')).rows[0].n), 0, 'no test of this file left a row');
});
