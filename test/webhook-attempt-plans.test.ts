/**
 * The plans of an attempt's two statements (workers/webhooks/deliveries.ts) for a batch of
 * deliveries, in a table whose statistics say what a running installation's often say: every
 * delivery done (they were taken in a quiet hour), where a backlog now waits. Each statement joins
 * the batch's input with the deliveries it names; that join must find each delivery's input by its
 * key, not read the whole input for every delivery (a nested loop compares 22,350 rows for a batch
 * of 150, most of the statement's time). The SQL explained is the very text each function runs,
 * captured as it runs, with its bindings; each EXPLAIN ANALYZE runs in a transaction rolled back.
 */
import t from 'tap';
import { createDb, type Db, type QueryEvent } from '../api/db/connection.ts';
import { recordEvents } from '../api/db/events.ts';
import { PROCESSING_STATUS_TRIGGER } from '../api/families/accounts/triggers.ts';
import type { DeliveryJob } from '../api/families/webhooks/deliveryJobs.ts';
import { openAttempts, recordAttempts, type OpenedAttempt } from '../workers/webhooks/deliveries.ts';
import { freshDatabase } from './helpers/db.ts';
import { everyPlanNode, type PlanNode } from './helpers/listPlan.ts';
import { withRollback } from './helpers/rollback.ts';

const db = createDb(await freshDatabase(t), 2);
t.teardown(() => db.destroy());
const tenant = { orgId: 'org_plans', environment: 'test' as const };
const DONE = 5000;
const BATCH = 150;

await db.raw(`insert into webhooks (id, org_id, environment, data) values ('wh_1', ?, ?, ?::jsonb)`,
  [tenant.orgId, tenant.environment, JSON.stringify({ trigger: 'processing_status', url: 'https://example.test/hook', status: 'active', retries: 8 })]);
const eventIds: string[] = [];
await db.transaction(async (tx) => {
  for (let made = 0; made < DONE + BATCH; made += 500) {
    eventIds.push(...await recordEvents(tx, tenant, Array.from({ length: Math.min(500, DONE + BATCH - made) }, (_, i) => ({
      trigger: PROCESSING_STATUS_TRIGGER, objectType: 'processing_account', objectId: `acct_${made + i}`, value: { status: 'active' },
    }))));
  }
});
// The first DONE deliveries delivered and the table analyzed then, as a quiet hour leaves it; then
// the batch arrives, pending, and the statistics do not know it yet (autovacuum kept off).
const deliveries = (from: number, to: number, state: 'delivered' | 'pending') => db.raw(
  `insert into webhook_deliveries (id, org_id, environment, webhook_id, event_id, state, attempts, next_attempt_at, finished_at)
   select 'whd_' || lpad(n::text, 8, '0'), ?, ?, 'wh_1', e.id, ?, ?, now(), case when ? = 'pending' then null else now() end
     from unnest(?::text[]) with ordinality as e(id, n) where n > ? and n <= ?`,
  [tenant.orgId, tenant.environment, state, state === 'pending' ? 0 : 1, state, eventIds, from, to]);
await db.raw('alter table webhook_deliveries set (autovacuum_enabled = false)');
await deliveries(0, DONE, 'delivered');
await db.raw('analyze webhook_deliveries');
await deliveries(DONE, DONE + BATCH, 'pending');

const jobs: DeliveryJob[] = eventIds.slice(DONE).map((eventId, i) => ({
  delivery_id: `whd_${String(DONE + i + 1).padStart(8, '0')}`, org_id: tenant.orgId, environment: tenant.environment, webhook_id: 'wh_1',
  event_id: eventId, trigger: 'processing_status', object_type: 'processing_account', object_id: `acct_${DONE + i}`, value: { status: 'active' },
  event_created_at: new Date().toISOString(), sequence: DONE + i + 1,
}));

/**
 * The statement `work` sends that reads the batch's input (the one with `marker` in its text), as
 * sent; `work` runs in a transaction rolled back, so the batch is still pending for the EXPLAIN.
 */
async function captured(marker: string, work: (tx: Db) => Promise<unknown>): Promise<QueryEvent> {
  let statement: QueryEvent | null = null;
  const capture = (q: QueryEvent) => { if (q.sql.includes(marker)) statement ??= q; };
  db.on('query', capture);
  try {
    await withRollback(db, work);
  } finally {
    db.off('query', capture);
  }
  if (!statement) throw new Error(`no statement with ${marker} was sent`);
  return statement;
}

/** The plan's rows compared and discarded by join filters, summed over its nodes, and its nodes' types. */
function joinFiltered(plan: PlanNode): { removed: number; nodes: string[] } {
  const all = everyPlanNode(plan);
  return { removed: all.reduce((sum, node) => sum + (node['Rows Removed by Join Filter'] ?? 0), 0), nodes: all.map((node) => node['Node Type']) };
}

/** EXPLAIN ANALYZE of a captured statement, in a transaction rolled back. */
async function analyzed(statement: QueryEvent): Promise<PlanNode> {
  const tx = await db.transaction();
  try {
    const explained = await tx.raw(`explain (analyze, format json) ${statement.sql.replace(/\$\d+/g, '?')}`, statement.bindings as never[]);
    return (explained.rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0].Plan;
  } finally {
    await tx.rollback();
  }
}

let opened: OpenedAttempt[] = [];

t.test('opening a batch of attempts finds each delivery of the batch by its key', async (t) => {
  const statement = await captured('r(delivery_id text, log jsonb)', (tx) => openAttempts(tx, jobs));
  const { removed, nodes } = joinFiltered(await analyzed(statement));
  t.ok(removed < BATCH, `rows compared and discarded by joins: ${removed} (nodes: ${nodes.join(', ')})`);
  opened = await openAttempts(db, jobs);
  t.equal(opened.length, BATCH, 'every pending delivery of the batch opened');
});

t.test("recording a batch of answers finds each delivery's answer by its key", async (t) => {
  const records = jobs.map((job, i) => ({
    job, opened: opened.find((o) => o.delivery_id === job.delivery_id)!, state: 'delivered' as const,
    answer: { status: 'delivered' as const, httpStatus: 200, oauthStatus: null, durationMs: 5 + (i % 7), response: null, error: null, nextAttemptAt: null },
  }));
  const statement = await captured('r(log_id text, delivery_id text', (tx) => recordAttempts(tx, records));
  const { removed, nodes } = joinFiltered(await analyzed(statement));
  t.ok(removed < BATCH, `rows compared and discarded by joins: ${removed} (nodes: ${nodes.join(', ')})`);
  await recordAttempts(db, records);
  const states = await db.raw(`select state, count(*)::int as n from webhook_deliveries group by state order by state`);
  t.same(states.rows, [{ state: 'delivered', n: DONE + BATCH }], 'the batch recorded');
});
