/**
 * Repository tier: payment link SQL beyond the generic operations
 * (api/families/payment_links/repository.ts) against a real database, each test in a transaction
 * rolled back at its end. A link's changes go through its family's update (test/payment-links.test.ts).
 */
import t from 'tap';
import { insertObjects } from '../../api/db/objects.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { lockPaymentLink } from '../../api/families/payment_links/repository.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };
const link = { id: 'pl_1', type: 'one_time', created_at: new Date(), modified_at: new Date(), data: { status: 'active', amount: 500 } };

t.test('a link is locked only through its own tenant', async (t) => {
  await withRollback(db, async (tx) => {
    await insertObjects(tx, 'payment_links', acme, [link]);
    t.equal(await lockPaymentLink(tx, globex, 'pl_1'), null);
    t.same((await lockPaymentLink(tx, acme, 'pl_1'))?.data, { status: 'active', amount: 500 });
  });
});
