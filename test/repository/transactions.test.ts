/**
 * Repository tier: the transaction queries of api/families/transactions/repository.ts against a
 * real database, each test in a transaction rolled back at its end. The one-statement payment
 * reads its parties in one round trip (`readPaymentParties`); the generic create reads them one
 * by one. Both must find the same rows, and only the tenant's own.
 */
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import { insertObjects } from '../../api/db/objects.ts';
import type { StoredObject } from '../../api/db/storedRow.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { defaultProcessingAccount } from '../../api/families/accounts/repository.ts';
import { defaultPayingMethod, findAccount, findMethod, readManyPaymentParties, readPaymentParties } from '../../api/families/transactions/repository.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };

function row(id: string, type: string, data: Record<string, unknown>, createdAt: string): StoredObject {
  return { id, type, created_at: new Date(createdAt), modified_at: new Date(createdAt), data };
}

/** Rows of one transaction share its now(): the test dates them itself. */
async function dated(tx: Db, table: string, tenant: Tenant, rows: StoredObject[]): Promise<void> {
  await insertObjects(tx, table, tenant, rows);
  for (const r of rows) await tx.raw(`update ${table} set created_at = ? where id = ?`, [r.created_at, r.id]);
}

async function seed(tx: Db): Promise<void> {
  await dated(tx, 'accounts', acme, [
    row('acct_shop1', 'processing', { name: 'Second shop' }, '2026-01-02T00:00:00Z'),
    row('acct_shop2', 'processing', { name: 'First shop' }, '2026-01-01T00:00:00Z'),
    row('acct_ann', 'customer', { name: 'Ann' }, '2026-01-01T00:00:00Z'),
  ]);
  await dated(tx, 'payment_methods', acme, [
    row('pm_later', 'card', { account_id: 'acct_ann', account_defaults: { paying: 'payments' } }, '2026-01-03T00:00:00Z'),
    row('pm_first', 'card', { account_id: 'acct_ann', account_defaults: { paying: 'all' } }, '2026-01-02T00:00:00Z'),
    row('pm_funding', 'bank_account', { account_id: 'acct_ann', account_defaults: { funding: 'all' } }, '2026-01-01T00:00:00Z'),
  ]);
  // Another org's rows under the same ids it might guess.
  await insertObjects(tx, 'accounts', globex, [row('acct_globex', 'processing', { name: 'Globex' }, '2025-01-01T00:00:00Z')]);
  await insertObjects(tx, 'payment_methods', globex, [row('pm_globex', 'card', { account_id: 'acct_ann', account_defaults: { paying: 'all' } }, '2025-01-01T00:00:00Z')]);
}

t.test('the one-round-trip read finds what the one-by-one reads find', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    const parties = await readPaymentParties(tx, acme, {
      customerId: 'acct_ann', processingId: 'acct_shop1', methodId: 'pm_later', defaultProcessing: true, payingMethodOf: 'acct_ann',
    });
    t.equal(parties.customer?.id, (await findAccount(tx, acme, 'acct_ann'))?.id);
    t.equal(parties.processing?.id, (await findAccount(tx, acme, 'acct_shop1'))?.id);
    t.equal(parties.method?.id, (await findMethod(tx, acme, 'pm_later'))?.id);
    t.equal(parties.defaultProcessing?.id, (await defaultProcessingAccount(tx, acme))?.id);
    t.equal(parties.defaultProcessing?.id, 'acct_shop2', 'the default processing account is the first made, whatever its id');
    t.equal(parties.payingMethod?.id, (await defaultPayingMethod(tx, acme, 'acct_ann'))?.id);
    t.equal(parties.payingMethod?.id, 'pm_first', 'the paying default is the first method that pays, not one that only funds');
    t.same(parties.customer?.data, { name: 'Ann' }, 'whole rows');
  });
});

t.test('neither read finds another tenant\'s rows', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    const parties = await readPaymentParties(tx, acme, { customerId: 'acct_globex', methodId: 'pm_globex', defaultProcessing: false });
    t.same(parties, {}, 'nothing of globex through the round trip');
    t.equal(await findAccount(tx, acme, 'acct_globex'), null);
    t.equal(await findMethod(tx, acme, 'pm_globex'), null);
    const globexParties = await readPaymentParties(tx, globex, { defaultProcessing: true, payingMethodOf: 'acct_ann' });
    t.equal(globexParties.defaultProcessing?.id, 'acct_globex');
    t.equal(globexParties.payingMethod?.id, 'pm_globex', 'globex\'s own method of an account id that acme uses too');
    t.equal((await defaultPayingMethod(tx, globex, 'acct_ann'))?.id, 'pm_globex');
  });
});

t.test('payments read together each find their own parties, in the order asked', async (t) => {
  await withRollback(db, async (tx) => {
    await seed(tx);
    const asks = [
      { tenant: acme, wanted: { customerId: 'acct_ann', processingId: 'acct_shop1', methodId: 'pm_later', defaultProcessing: true, payingMethodOf: 'acct_ann' } },
      { tenant: globex, wanted: { customerId: 'acct_ann', methodId: 'pm_later', defaultProcessing: true, payingMethodOf: 'acct_ann' } },
      { tenant: acme, wanted: { defaultProcessing: false } },
      { tenant: acme, wanted: { customerId: 'acct_globex', methodId: 'pm_globex', defaultProcessing: false } },
      { tenant: acme, wanted: { processingId: 'acct_shop2', methodId: 'pm_funding', defaultProcessing: false } },
    ];
    const together = await readManyPaymentParties(tx, asks);
    const alone = [];
    for (const ask of asks) alone.push(await readPaymentParties(tx, ask.tenant, ask.wanted));
    t.same(together, alone, 'the same parties as each read alone');
    t.same(together.map((p) => Object.fromEntries(Object.entries(p).map(([role, row]) => [role, row.id]))), [
      { customer: 'acct_ann', processing: 'acct_shop1', method: 'pm_later', defaultProcessing: 'acct_shop2', payingMethod: 'pm_first' },
      { defaultProcessing: 'acct_globex', payingMethod: 'pm_globex' },
      {},
      {},
      { processing: 'acct_shop2', method: 'pm_funding' },
    ]);
  });
});

t.test('nothing asked, no round trip and no parties', async (t) => {
  t.same(await readPaymentParties(db, acme, { defaultProcessing: false }), {});
});
