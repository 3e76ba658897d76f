/**
 * A webhook's logs (`GET /webhooks/{id}/logs`, or `webhook_id == "…"` in a list of logs) are read
 * through the index by webhook, which a generated column feeds: the answer that completes a log
 * leaves that column as it was, so the update writes no index entry (test/repository/webhook-
 * attempts.test.ts). The SQL explained is the very text the list API runs (captured from the engine).
 */
import t from 'tap';
import { createDb } from '../api/db/connection.ts';
import type { Tenant } from '../api/engine/family.ts';
import { freshDatabase } from './helpers/db.ts';
import { listedWithPlan, planNodes, seedTenantRows } from './helpers/listPlan.ts';

const db = createDb(await freshDatabase(t), 2);
t.teardown(() => db.destroy());
const tenant: Tenant = { orgId: 'org_hooks', environment: 'test' };

// A tenant with many logs, one in a hundred of a quiet webhook.
await seedTenantRows(db, tenant, {
  table: 'webhook_logs', idPrefix: 'whl_', type: 'webhook_log', count: 30000,
  dataSql: "jsonb_build_object('webhook_id', case when g % 100 = 0 then 'wh_quiet' else 'wh_busy' end, 'status', 'delivered', 'attempt', 1)",
});

const QUERY: Array<[string, string]> = [['q', 'webhook_id == "wh_quiet"'], ['order_by', 'desc(created_at)'], ['limit', '3']];

t.test('no index of the logs reads their data, which an answer changes', async (t) => {
  const indexes = await db.raw("select indexdef from pg_indexes where tablename = 'webhook_logs'");
  t.same(indexes.rows.filter((i: { indexdef: string }) => /\bdata\b/.test(i.indexdef)).map((i: { indexdef: string }) => i.indexdef), []);
});

t.test("a list of one webhook's logs reads the index by webhook (no statistics)", async (t) => {
  const { ids, plan } = await listedWithPlan(db, tenant, 'webhook_logs', QUERY);
  t.same(ids, ['whl_00030000', 'whl_00029900', 'whl_00029800'], "the quiet webhook's newest");
  t.match(plan, '"Index Name":"webhook_logs_by_webhook"', planNodes(plan));
  t.notMatch(plan, '"Node Type":"Seq Scan"', 'not every log');
});

t.test("after ANALYZE, a list of one webhook's logs still reads the index by webhook", async (t) => {
  await db.raw('analyze webhook_logs');
  const { ids, plan } = await listedWithPlan(db, tenant, 'webhook_logs', QUERY);
  t.same(ids, ['whl_00030000', 'whl_00029900', 'whl_00029800'], "the quiet webhook's newest");
  t.match(plan, '"Index Name":"webhook_logs_by_webhook"', planNodes(plan));
  t.notMatch(plan, '"Node Type":"Seq Scan"', 'not every log');
});
