/**
 * Events carry three indexes, each entry written by every event a payment writes: the primary
 * key, the tenant index by creation time and the dispatch order. Each reader of events by
 * creation time reads one of them, with no statistics gathered and after ANALYZE: retention's
 * delete (tenant by tenant in the tenant index) and a resend's window. The SQL explained is the
 * very text they run.
 */
import t from 'tap';
import { createDb, rows, type QueryEvent } from '../api/db/connection.ts';
import { expiredEventsStatement } from '../api/db/retention.ts';
import { resendEvents } from '../api/families/webhooks/resend.ts';
import type { Tenant } from '../api/engine/family.ts';
import { freshDatabase } from './helpers/db.ts';

const db = createDb(await freshDatabase(t), 2);
t.teardown(() => db.destroy());
const TENANTS = 40;
const PER_TENANT = 1000;
const DAY_MS = 86_400_000;
const tenant: Tenant = { orgId: 'org_7', environment: 'test' };

// Events of 30 days in each tenant, dispatched, and a few of each tenant a day past 30 days.
await db.raw('alter table events set (autovacuum_enabled = false)');
await db.raw(
  `insert into events (id, org_id, environment, trigger, object_type, object_id, value, created_at, dispatched_at)
   select 'evt_' || lpad(g::text, 8, '0'), 'org_' || (g % ?), 'test', 'payment', 'transaction', 'txn_' || g, '{}',
          now() - make_interval(secs => case when g % 100 = 0 then 31 * 86400 else (g % 2592000) end), now()
     from generate_series(1, ?) g`,
  [TENANTS, TENANTS * PER_TENANT]);
await db.raw(`insert into webhooks (id, org_id, environment, data) values ('wh_plans', ?, ?, '{"trigger": "payment", "status": "active", "url": "https://example.com/hook"}')`,
  [tenant.orgId, tenant.environment]);

/** How a plan reads events: its scans of the table and the events' indexes it reads (a bitmap scan names its index below it). */
async function explained(sql: string, bindings: unknown[]): Promise<{ scans: string[]; indexes: string[]; text: string }> {
  const result = await db.raw(`explain (format json) ${sql}`, bindings as never[]);
  const nodes: Array<Record<string, unknown>> = [];
  const walk = (node: Record<string, unknown>) => { nodes.push(node); for (const child of (node.Plans as typeof nodes | undefined) ?? []) walk(child); };
  walk(result.rows[0]['QUERY PLAN'][0].Plan);
  return {
    scans: nodes.filter((node) => node['Relation Name'] === 'events').map((node) => String(node['Node Type'])),
    indexes: nodes.map((node) => node['Index Name']).filter((name): name is string => typeof name === 'string' && name.startsWith('events_')),
    text: JSON.stringify(result.rows[0]['QUERY PLAN'][0].Plan).slice(0, 600),
  };
}

t.test('events carry the primary key, the tenant index and the dispatch order, and no index on creation time alone', async (t) => {
  const indexes = await rows<{ indexname: string }>(db, "select indexname from pg_indexes where tablename = 'events' order by 1");
  t.same(indexes.map((i) => i.indexname), ['events_by_tenant_created', 'events_dispatch_order', 'events_pkey']);
});

for (const stats of ['no statistics', 'after analyze']) {
  t.test(`retention's delete of expired events reads the tenant index (${stats})`, async (t) => {
    if (stats === 'after analyze') await db.raw('analyze events');
    const statement = expiredEventsStatement(30 * DAY_MS);
    const { scans, indexes, text } = await explained(statement.sql, statement.bindings);
    t.notOk(scans.includes('Seq Scan'), `no read of every event: ${scans} ${text}`);
    t.ok(indexes.includes('events_by_tenant_created'), `the tenant index: ${indexes} ${text}`);
  });

  t.test(`a resend's window reads the tenant index (${stats})`, async (t) => {
    let captured: QueryEvent | null = null;
    const capture = (q: QueryEvent) => { if (/join events e/.test(q.sql)) captured ??= q; };
    db.on('query', capture);
    const until = new Date();
    const created = await resendEvents(db, tenant, 'wh_plans', { since: new Date(until.getTime() - 3600_000), until });
    db.off('query', capture);
    t.ok(created.length > 0, 'the window has events');
    if (!captured) throw new Error('the resend query was not seen');
    const { sql, bindings } = captured as QueryEvent;
    const { scans, indexes, text } = await explained(sql.replace(/\$\d+/g, '?'), bindings);
    t.notOk(scans.includes('Seq Scan'), `no read of every event: ${scans} ${text}`);
    t.same(indexes, ['events_by_tenant_created'], `the tenant index: ${indexes} ${text}`);
  });
}

t.test('executed, the delete takes every expired event and no other', async (t) => {
  const [before] = await rows<{ expired: number; young: number }>(db,
    `select count(*) filter (where created_at < now() - interval '30 days')::int as expired, count(*) filter (where created_at >= now() - interval '30 days')::int as young from events`);
  const statement = expiredEventsStatement(30 * DAY_MS, 100_000);
  const [done] = await rows<{ deleted: number }>(db, statement.sql, statement.bindings);
  t.equal(done.deleted, before.expired, `all ${before.expired} expired events, of all ${TENANTS} tenants`);
  const [after] = await rows<{ left: number }>(db, 'select count(*)::int as left from events');
  t.equal(after.left, before.young, 'the young ones stay');
});
