/**
 * Repository tier: payment link SQL beyond the generic operations
 * (api/families/payment_links/repository.ts) against a real database, each test in a transaction
 * rolled back at its end.
 */
import t from 'tap';
import { insertObjects } from '../../api/db/objects.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { lockPaymentLink, mergeLinkData } from '../../api/families/payment_links/repository.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };
const link = { id: 'pl_1', type: 'one_time', created_at: new Date(), modified_at: new Date(), data: { status: 'active', amount: 500 } };

t.test('a link is locked and changed only through its own tenant; a change merges into its data', async (t) => {
  await withRollback(db, async (tx) => {
    await insertObjects(tx, 'payment_links', acme, [link]);
    t.equal(await lockPaymentLink(tx, globex, 'pl_1'), null);
    t.same((await lockPaymentLink(tx, acme, 'pl_1'))?.data, { status: 'active', amount: 500 });
    await mergeLinkData(tx, globex, 'pl_1', { status: 'stolen' });
    await mergeLinkData(tx, acme, 'pl_1', { status: 'paid', transaction_id: 'txn_1' });
    t.same((await lockPaymentLink(tx, acme, 'pl_1'))?.data, { status: 'paid', amount: 500, transaction_id: 'txn_1' });
  });
});
