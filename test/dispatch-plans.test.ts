/**
 * The plan a dispatch pass runs (workers/webhooks/dispatch.ts): the generic plan of its prepared
 * statement, made once per connection rather than once a pass, and one that reads what a pass
 * takes, not the outbox or the tables behind it. An outbox with a long dispatched history and
 * statistics taken over it, then a backlog taken in passes of PASS events, on one connection, so
 * the prepared statement's plan counts (`pg_prepared_statements`) are the passes' own; then one
 * more pass's statement, as sent, executed by its generic plan under EXPLAIN ANALYZE in a
 * transaction rolled back.
 */
import t from 'tap';
import { createDb, type Db, type QueryEvent } from '../api/db/connection.ts';
import { recordEvents } from '../api/db/events.ts';
import { PROCESSING_STATUS_TRIGGER } from '../api/families/accounts/triggers.ts';
import { dispatchEventBatch } from '../workers/webhooks/dispatch.ts';
import { freshDatabase } from './helpers/db.ts';
import { everyPlanNode, type PlanNode } from './helpers/listPlan.ts';

const db = createDb(await freshDatabase(t), 1);
t.teardown(() => db.destroy());
const tenant = { orgId: 'org_dispatch_plans', environment: 'test' as const };
const HISTORY = 3000;
const BACKLOG = 1000;
const PASS = 100;
const OTHER_WEBHOOKS = 2000;
let made = 0;

await db.raw(`insert into webhooks (id, org_id, environment, data) values ('wh_plans', ?, ?, ?::jsonb)`,
  [tenant.orgId, tenant.environment, JSON.stringify({ trigger: PROCESSING_STATUS_TRIGGER, url: 'https://example.test/hook', status: 'active', retries: 8 })]);

async function events(count: number): Promise<void> {
  await db.transaction(async (tx) => {
    for (const end = made + count; made < end; made += 500) {
      await recordEvents(tx, tenant, Array.from({ length: Math.min(500, end - made) }, (_, i) => ({
        trigger: PROCESSING_STATUS_TRIGGER, objectType: 'processing_account', objectId: `acct_${made + i}`, value: { status: 'active' },
      })));
    }
  });
}

async function drain(): Promise<number> {
  let passes = 0;
  for (let pass = await dispatchEventBatch(db, PASS); !pass.caughtUp; pass = await dispatchEventBatch(db, PASS)) passes += 1;
  return passes + 1;
}

// Other tenants' webhooks: as in any installation with more than one, a pass must find an event's by an index.
await db.raw(`insert into webhooks (id, org_id, environment, data)
  select 'wh_other_' || n, 'org_other_' || (n % 500), 'test', jsonb_build_object('trigger', ?::text, 'url', 'https://example.test/' || n, 'status', 'active')
    from generate_series(1, ?) n`, [PROCESSING_STATUS_TRIGGER, OTHER_WEBHOOKS]);
await events(HISTORY);
await drain();
await db.raw('analyze events, webhook_deliveries, webhooks, graphile_worker._private_jobs');

/** The dispatch statement's prepared forms on the connection (one per window state), with their plan counts. */
async function prepared(): Promise<Array<{ name: string; generic_plans: number; custom_plans: number }>> {
  const found = await db.raw(`select name, generic_plans::int, custom_plans::int from pg_prepared_statements where statement like 'with batch as %'`);
  return found.rows as Array<{ name: string; generic_plans: number; custom_plans: number }>;
}

t.test('every pass runs the generic plan of its statement', async (t) => {
  await events(BACKLOG);
  const before = await prepared();
  const passes = await drain();
  t.ok(passes >= BACKLOG / PASS, `the backlog took ${passes} passes`);
  const after = await prepared();
  t.ok(after.length > 0, 'the pass statement is prepared on the connection');
  t.equal(after.reduce((sum, p) => sum + p.custom_plans, 0), 0, 'no pass was planned for its own parameters');
  const generic = after.reduce((sum, p) => sum + p.generic_plans, 0) - before.reduce((sum, p) => sum + p.generic_plans, 0);
  t.ok(generic >= passes - 2, `the passes ran the generic plan: ${generic} of ${passes}`);
  const deliveries = await db.raw('select count(*)::int as n from webhook_deliveries');
  t.equal(deliveries.rows[0].n, HISTORY + BACKLOG, 'one delivery per event');
});

/** The tables a pass must find its rows of by an index (the others hold a row or a few). */
const READ_BY_INDEX = ['events', 'webhooks', 'webhook_deliveries', 'webhook_logs', '_private_jobs'];

/** A binding as an SQL literal (an array as its text form), which EXECUTE casts to the parameter's type. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const text = Array.isArray(value)
    ? `{${value.map((item) => (item === null ? 'NULL' : `"${String(item).replace(/["\\]/g, '\\$&')}"`)).join(',')}}`
    : String(value);
  return `'${text.replaceAll("'", "''")}'`;
}

t.test("a pass's generic plan reads the events it takes, and every other row by an index", async (t) => {
  await events(BACKLOG);
  let statement: QueryEvent | null = null;
  const capture = (q: QueryEvent) => { if (q.sql.startsWith('with batch as')) statement ??= q; };
  db.on('query', capture);
  const tx = await db.transaction();
  try {
    // The pass runs to give its statement, and is undone: the backlog is still there for the EXPLAIN.
    await tx.raw('savepoint before_pass');
    await dispatchEventBatch(tx, PASS);
    await tx.raw('rollback to savepoint before_pass');
    db.off('query', capture);
    if (!statement) throw new Error('no pass statement was sent');
    const sent: QueryEvent = statement;
    await tx.raw(`set local plan_cache_mode = force_generic_plan`);
    // The statement as sent, with its `$n` placeholders: prepared as such, then executed with its bindings.
    await tx.raw(`prepare dispatch_plan as ${sent.sql}`);
    // EXECUTE's arguments are part of a utility statement, which takes no bindings: they go as literals.
    const explained = await tx.raw(`explain (analyze, format json) execute dispatch_plan(${sent.bindings.map(literal).join(', ')})`);
    const plan = (explained.rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0].Plan;
    const all = everyPlanNode(plan);
    const seqScans = all.filter((n) => n['Node Type'] === 'Seq Scan' && READ_BY_INDEX.includes(n['Relation Name'] ?? ''));
    t.same(seqScans.map((n) => n['Relation Name']), [], 'no table is read whole');
    const eventsRead = all.filter((n) => n['Relation Name'] === 'events' && n['Index Name'] === 'events_dispatch_order')
      .reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0);
    t.ok(eventsRead > 0 && eventsRead <= 2 * PASS, `the outbox read in its index's order, up to the pass's limit: ${eventsRead} rows`);
    const inserted = all.filter((n) => n['Node Type'] === 'ModifyTable' && n['Relation Name'] === 'webhook_deliveries');
    t.same(inserted.map((n) => n['Actual Rows']), [PASS, 0], "the pass's deliveries made, and none skipped");
  } finally {
    db.off('query', capture);
    await tx.rollback();
  }
});
