/**
 * A transaction's operations, listed as the console lists them (`transaction_id == "txn_…"`), read
 * the index by transaction, not every operation of a large tenant, with no statistics gathered
 * and after ANALYZE. The SQL explained is the very text the list API runs (captured from the engine).
 */
import t from 'tap';
import { createDb } from '../api/db/connection.ts';
import type { Tenant } from '../api/engine/family.ts';
import { freshDatabase } from './helpers/db.ts';
import { listedWithPlan, seedTenantRows } from './helpers/listPlan.ts';

const db = createDb(await freshDatabase(t), 2);
t.teardown(() => db.destroy());
const tenant: Tenant = { orgId: 'org_operations', environment: 'test' };

// A tenant with many operations, two of each transaction.
await seedTenantRows(db, tenant, {
  table: 'transaction_operations', idPrefix: 'op_', type: 'sale', count: 30000,
  dataSql: "jsonb_build_object('transaction_id', 'txn_' || (g / 2), 'amount', 100, 'status', 'complete')",
});

function listed(transactionId: string): Promise<{ ids: string[]; plan: string }> {
  return listedWithPlan(db, tenant, 'transaction_operations', [['q', `transaction_id == "${transactionId}"`], ['limit', '100']]);
}

for (const stats of ['no statistics', 'after analyze']) {
  t.test(`a transaction's operations read the index by transaction (${stats})`, async (t) => {
    if (stats === 'after analyze') await db.raw('analyze transaction_operations');
    const { ids, plan } = await listed('txn_7000');
    t.same(ids, ['op_00014000', 'op_00014001'], 'its two operations, oldest first');
    t.match(plan, '"Index Name":"transaction_operations_search_transaction"', plan.slice(0, 400));
    t.notMatch(plan, '"Node Type":"Seq Scan"', 'not every operation of the tenant');
    t.notMatch(plan, 'transaction_operations_by_tenant_created', 'not the tenant\'s every operation');
  });
}
