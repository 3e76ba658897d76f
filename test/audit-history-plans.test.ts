/**
 * An object's history and a request's changes, listed as the console lists them (`object_id` or
 * `request_id`, newest first, api/console/public/history.js), read the audit events' indexes on
 * those ids, not every event of a large tenant. The SQL explained is the very text the list API
 * runs (captured from the engine).
 */
import t from 'tap';
import { createDb } from '../api/db/connection.ts';
import type { Tenant } from '../api/engine/family.ts';
import { freshDatabase } from './helpers/db.ts';
import { listedWithPlan } from './helpers/listPlan.ts';

const db = createDb(await freshDatabase(t), 2);
t.teardown(() => db.destroy());
const tenant: Tenant = { orgId: 'org_history', environment: 'test' };
const EVENTS = 30000;

// A tenant with many events: a change of an object every third, a request every other.
await db.raw(
  `insert into audit_events (id, org_id, environment, data, created_at)
   select 'aud_' || lpad(g::text, 8, '0'), ?, ?,
          jsonb_build_object('actor', jsonb_build_object('type', 'secret_key'), 'action', 'update', 'object_type', 'account',
                             'object_id', 'acct_' || (g / 3), 'changes', '{}'::jsonb, 'request_id', 'req_' || (g / 2), 'ip', '127.0.0.1'),
          now() - make_interval(secs => ? - g)
     from generate_series(1, ?) g`,
  [tenant.orgId, tenant.environment, EVENTS, EVENTS]);
await db.raw('analyze audit_events');

function listed(filter: [string, string]): Promise<{ ids: string[]; plan: string }> {
  return listedWithPlan(db, tenant, 'audit_events', [filter, ['order_by', 'desc(created_at)'], ['limit', '50']]);
}

t.test('an object\'s history reads the index by object', async (t) => {
  const { ids, plan } = await listed(['object_id', 'acct_4000']);
  t.same(ids, ['aud_00012002', 'aud_00012001', 'aud_00012000'], 'its three events, newest first');
  t.match(plan, '"Index Name":"audit_events_by_object"', plan.slice(0, 400));
  t.notMatch(plan, 'audit_events_by_tenant_created', 'not the tenant\'s every event');
});

t.test('a request\'s changes read the index by request', async (t) => {
  const { ids, plan } = await listed(['request_id', 'req_7000']);
  t.same(ids, ['aud_00014001', 'aud_00014000'], 'its two events, newest first');
  t.match(plan, '"Index Name":"audit_events_by_request"', plan.slice(0, 400));
  t.notMatch(plan, 'audit_events_by_tenant_created', 'not the tenant\'s every event');
});
