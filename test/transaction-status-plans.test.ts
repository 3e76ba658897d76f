/**
 * Transactions carry no index by status: a list filtered by status (the one reader of transactions
 * by status in a tenant) reads the tenant index by creation time, newest first, after ANALYZE;
 * never every row of the table, statistics or none. The SQL explained is the very text the list
 * API runs (captured from the engine).
 */
import t from 'tap';
import { createDb, rows } from '../api/db/connection.ts';
import type { Tenant } from '../api/engine/family.ts';
import { freshDatabase } from './helpers/db.ts';
import { listedWithPlan, planNodes, seedTenantRows } from './helpers/listPlan.ts';

const db = createDb(await freshDatabase(t), 2);
t.teardown(() => db.destroy());
const tenant: Tenant = { orgId: 'org_statuses', environment: 'test' };

// A tenant with many transactions, one in a hundred declined.
await seedTenantRows(db, tenant, {
  table: 'transactions', idPrefix: 'txn_', type: 'payment', count: 30000,
  dataSql: "jsonb_build_object('amount', 100, 'status', case when g % 100 = 0 then 'declined' else 'processed' end)",
});

t.test('transactions carry no index by status', async (t) => {
  const indexes = await rows<{ indexdef: string }>(db, "select indexdef from pg_indexes where tablename = 'transactions'");
  t.same(indexes.filter((i) => /'status'|{status}/.test(i.indexdef)).map((i) => i.indexdef), []);
});

t.test('a list by status reads an index of the tenant, never every transaction (no statistics)', async (t) => {
  const { ids, plan } = await listedWithPlan(db, tenant, 'transactions', [['q', 'status == "declined"'], ['order_by', 'desc(created_at)'], ['limit', '3']]);
  t.same(ids, ['txn_00030000', 'txn_00029900', 'txn_00029800'], 'the newest declined ones');
  t.match(plan, /"Index Name":"transactions_by_tenant_/, planNodes(plan));
  t.notMatch(plan, '"Node Type":"Seq Scan"', 'not every transaction');
});

t.test('after ANALYZE, a list by status walks the tenant index by creation time, newest first', async (t) => {
  await db.raw('analyze transactions');
  const { ids, plan } = await listedWithPlan(db, tenant, 'transactions', [['q', 'status == "declined"'], ['order_by', 'desc(created_at)'], ['limit', '3']]);
  t.same(ids, ['txn_00030000', 'txn_00029900', 'txn_00029800'], 'the newest declined ones');
  t.match(plan, '"Index Name":"transactions_by_tenant_created"', planNodes(plan));
  t.notMatch(plan, '"Node Type":"Seq Scan"', 'not every transaction');
  t.notMatch(plan, '"Node Type":"Sort"', 'no sort of the tenant');
});
