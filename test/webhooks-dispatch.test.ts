/**
 * Dispatch behind the snapshot position (workers/webhooks/dispatch.ts): events commit out of
 * their order, and a dispatcher must neither skip one that commits late nor dispatch one twice,
 * whether it takes the outbox in one batch, in pages, or beside another dispatcher. The
 * dispatcher runs here directly against a real database; the outcome is the stored deliveries.
 */
import t, { type Test } from 'tap';
import { createDb, type Db } from '../api/db/connection.ts';
import { recordEvents, type EventTenant } from '../api/db/events.ts';
import { dispatchEventBatch, eventsPending } from '../workers/webhooks/dispatch.ts';
import { startDispatchLoop } from '../workers/webhooks/dispatchLoop.ts';
import type { DispatchClaims } from '../workers/webhooks/deliver.ts';
import { eventually } from './helpers/wait.ts';
import { releaseDeadWorkers } from '../workers/liveness.ts';
import { freshDatabase } from './helpers/db.ts';
import { PROCESSING_STATUS_TRIGGER } from '../api/families/accounts/triggers.ts';
import { TRANSACTION_TRIGGERS } from '../api/families/transactions/triggers.ts';

const tenant: EventTenant = { orgId: 'org_dispatch', environment: 'test' };
let counter = 0;

async function setup(t: Test): Promise<Db> {
  const db = createDb(await freshDatabase(t), 6);
  t.teardown(() => db.destroy());
  await db.raw(`insert into webhooks (id, org_id, environment, data) values (?, ?, ?, '{"trigger": "processing_status", "status": "active"}')`,
    ['wh_dispatch', tenant.orgId, tenant.environment]);
  // The queue's first job of a task registers the task: a transaction left open across the
  // first commit would make that commit wait for it.
  await db.transaction((tx) => recordEvents(tx, tenant, [{ trigger: TRANSACTION_TRIGGERS.payment, objectType: 'transaction', objectId: 'txn_0', value: {} }]));
  while (!(await dispatchEventBatch(db, 100)).caughtUp);
  return db;
}

function drafts(count: number) {
  return Array.from({ length: count }, () => {
    counter += 1;
    return { trigger: PROCESSING_STATUS_TRIGGER, objectType: 'processing_account', objectId: `acct_${counter}`, value: { n: counter } };
  });
}

/** Commits `count` events in one transaction. */
function commitEvents(db: Db, count: number): Promise<string[]> {
  return db.transaction((tx) => recordEvents(tx, tenant, drafts(count)));
}

/** Dispatch batches of `limit` until one has caught up. */
async function dispatchAll(db: Db, limit: number): Promise<void> {
  while (!(await dispatchEventBatch(db, limit)).caughtUp);
}

async function deliveredEvents(db: Db): Promise<string[]> {
  const found = await db.raw('select event_id from webhook_deliveries order by event_id');
  return found.rows.map((row: { event_id: string }) => row.event_id);
}

async function deliveryJobCount(db: Db): Promise<number> {
  const found = await db.raw(`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'deliver_webhook'`);
  return found.rows[0].n;
}

t.test('an event whose transaction commits after a later one was dispatched is dispatched once it commits', { timeout: 30_000 }, async (t) => {
  const db = await setup(t);
  const late = await db.transaction();
  const lateIds = await recordEvents(late, tenant, drafts(1));
  const early = await commitEvents(db, 2);
  await dispatchAll(db, 100);
  t.same(await deliveredEvents(db), [...early].sort(), 'only the committed events are dispatched');
  await late.commit();
  await dispatchAll(db, 100);
  t.same(await deliveredEvents(db), [...early, ...lateIds].sort(), 'the late commit is dispatched, the others not again');
  t.equal(await deliveryJobCount(db), 3, 'one job per delivery');
});

t.test('a look finds what a pass would take: events committed since, one committed behind the position, a window left open', { timeout: 30_000 }, async (t) => {
  const db = await setup(t);
  t.equal(await eventsPending(db), false, 'caught up: nothing to take');
  await commitEvents(db, 1);
  t.equal(await eventsPending(db), true, 'an event committed since the last pass');
  await dispatchAll(db, 100);
  t.equal(await eventsPending(db), false, 'taken');
  // A transaction open across a pass: its txid is in the pass's snapshot's in-progress list.
  const late = await db.transaction();
  await recordEvents(late, tenant, drafts(1));
  await commitEvents(db, 1);
  await dispatchAll(db, 100);
  t.equal(await eventsPending(db), false, 'the open transaction\'s event is not committed yet');
  await late.commit();
  t.equal(await eventsPending(db), true, 'committed behind the position: found');
  await dispatchAll(db, 100);
  t.equal(await eventsPending(db), false, 'taken');
  await commitEvents(db, 3);
  t.equal((await dispatchEventBatch(db, 1)).caughtUp, false, 'a pass took one page of three');
  t.equal(await eventsPending(db), true, 'its window is open');
  await dispatchAll(db, 100);
  t.equal(await eventsPending(db), false, 'the window taken');
  const readOnly = await db.transaction();
  await readOnly.raw('set transaction read only');
  t.equal(await eventsPending(readOnly), true, 'where writes are refused, a pass is due: its refusal sends the connection to the primary');
  await readOnly.rollback();
});

t.test('a caught-up loop looks with one statement and makes a pass only once there is something to take', { timeout: 30_000 }, async (t) => {
  const db = await setup(t);
  let looks = 0;
  let passes = 0;
  const count = ({ sql }: { sql: string }) => {
    if (sql.includes('as pending')) looks += 1;
    if (sql.startsWith('with batch as')) passes += 1;
  };
  db.on('query', count);
  const loop = startDispatchLoop(db, { batch: 100, idleMs: 5, onError: (error) => t.fail(error.message) });
  await eventually(() => looks, (n) => n >= 20, 10_000, 5);
  t.equal(passes, 1, 'the first pass found nothing; every look after it was the statement alone');
  const [id] = await commitEvents(db, 1);
  await eventually(() => deliveredEvents(db), (ids) => ids.includes(id!), 10_000, 10);
  await loop.stop();
  db.off('query', count);
  t.ok(passes >= 2, 'the event committed meanwhile was taken by a pass');
});

t.test('a backlog taken in pages, with commits landing between the pages: every event once', { timeout: 30_000 }, async (t) => {
  const db = await setup(t);
  const late = await db.transaction();
  const lateIds = await recordEvents(late, tenant, drafts(2));
  const first: string[] = [];
  for (let i = 0; i < 5; i++) first.push(...(await commitEvents(db, 5)));
  const page = await dispatchEventBatch(db, 10);
  t.same([page.taken, page.caughtUp], [10, false], 'a full page leaves the rest of its window for the next');
  await late.commit();
  const between = await commitEvents(db, 7);
  await dispatchAll(db, 10);
  const all = [...first, ...lateIds, ...between].sort();
  t.same(await deliveredEvents(db), all, 'every committed event has its delivery');
  t.equal(await deliveryJobCount(db), all.length, 'and exactly one job');
  t.same((await dispatchEventBatch(db, 10)), { taken: 0, made: 0, claimed: [], overflow: 0, caughtUp: true }, 'nothing left to take');
});

t.test('dispatchers running side by side dispatch each event once', { timeout: 30_000 }, async (t) => {
  const db = await setup(t);
  const committing = Promise.all(Array.from({ length: 20 }, () => commitEvents(db, 10)));
  const dispatching = Promise.all(Array.from({ length: 4 }, async () => {
    for (let i = 0; i < 10; i++) await dispatchAll(db, 25);
  }));
  const ids = (await committing).flat();
  await dispatching;
  await dispatchAll(db, 25);
  t.same(await deliveredEvents(db), ids.sort(), 'every event dispatched');
  t.equal(await deliveryJobCount(db), ids.length, 'one job per delivery');
});

t.test('a dispatcher finding another\'s pass running takes nothing at once instead of waiting behind it; the events go on the next pass', { timeout: 30_000 }, async (t) => {
  const db = await setup(t);
  const ids = await commitEvents(db, 3);
  const other = await db.transaction();
  await other.raw(`select pg_advisory_xact_lock(hashtext('webhook_dispatch_position'))`); // another worker's pass, in progress
  const pass = dispatchEventBatch(db, 10);
  const first = await Promise.race([pass, new Promise<'waiting'>((resolve) => setTimeout(() => resolve('waiting'), 5000))]);
  await other.rollback();
  t.same(first, { taken: 0, made: 0, claimed: [], overflow: 0, caughtUp: false, turnTaken: true }, 'the pass ended, taking nothing');
  await pass;
  t.same(await deliveredEvents(db), [], 'nothing dispatched meanwhile');
  await dispatchAll(db, 10);
  t.same(await deliveredEvents(db), [...ids].sort(), 'the next pass dispatches the events');
});

t.test('a pass claims up to its org\'s room for the claiming process: those jobs come back locked by it, the rest queue', { timeout: 30_000 }, async (t) => {
  const db = await setup(t);
  // The first delivery queued registers the task: until then a pass claims nothing.
  const first = await commitEvents(db, 1);
  const unknownTask = await dispatchEventBatch(db, 10, { lockedBy: 'worker-claims', rooms: [{ org: tenant.orgId, room: 3 }] });
  t.same([unknownTask.claimed, unknownTask.overflow], [[], 0], 'nothing claimed before the task is known, and nothing counted as past the room');
  const ids = await commitEvents(db, 5);
  const pass = await dispatchEventBatch(db, 10, { lockedBy: 'worker-claims', rooms: [{ org: tenant.orgId, room: 3 }] });
  t.equal(pass.taken, 5);
  t.equal(pass.overflow, 2, 'the two deliveries past the room are counted: queued though their org is listed');
  const claimedEvents = pass.claimed.map((job) => (job.payload as { event_id: string }).event_id);
  t.same([...claimedEvents].sort(), ids.slice(0, 3).sort(), 'the first three deliveries, in commit order, are claimed');
  const jobs = await db.raw(`select id::text, locked_by, attempts, payload->>'event_id' as event_id, key from graphile_worker._private_jobs
                               where payload->>'event_id' = any(?) order by id`, [ids]);
  const locked = jobs.rows.filter((job: { locked_by: string | null }) => job.locked_by === 'worker-claims');
  t.same(locked.map((job: { id: string }) => job.id).sort(), pass.claimed.map((job) => job.id).sort(), 'their jobs are locked by the claimer');
  t.ok(locked.every((job: { attempts: number; key: string }) => job.attempts === 1 && job.key.startsWith('deliver:whd_')), 'taken once, under the delivery\'s key');
  t.same(jobs.rows.filter((job: { locked_by: string | null }) => job.locked_by === null).map((job: { event_id: string }) => job.event_id), ids.slice(3), 'the rest queue, free');
  const firstClaimed = pass.claimed.find((job) => (job.payload as { event_id: string }).event_id === ids[0])!;
  const [delivery] = (await db.raw('select id from webhook_deliveries where event_id = ?', [ids[0]])).rows;
  t.match(firstClaimed.payload, { delivery_id: delivery.id, event_id: ids[0], org_id: tenant.orgId, environment: tenant.environment, webhook_id: 'wh_dispatch' },
    'a claimed job carries the delivery and its event, as a queued one does');
  // A process that dies holding them (it never announces itself again) has them released for any worker.
  t.equal(await releaseDeadWorkers(db, 0), 3, 'released with the silent process\'s jobs');
  t.equal(Number((await db.raw(`select count(*) as n from graphile_worker._private_jobs where locked_by is not null`)).rows[0].n), 0, 'none left locked');
  const others = await commitEvents(db, 2);
  const unlisted = await dispatchEventBatch(db, 10, { lockedBy: 'worker-claims', rooms: [{ org: 'org_other', room: 10 }] });
  t.same([unlisted.claimed, unlisted.overflow], [[], 0], 'an org not listed has none claimed, and its queued deliveries are not past any room');
  t.equal(await deliveryJobCount(db), 8, 'one job per delivery, claimed or queued');
  t.same(await deliveredEvents(db), [...first, ...ids, ...others].sort());
});

t.test('an event of a trigger no webhook listens to is passed over, and the position moves past it', { timeout: 30_000 }, async (t) => {
  const db = await setup(t);
  await db.transaction((tx) => recordEvents(tx, tenant, [{ trigger: TRANSACTION_TRIGGERS.payment, objectType: 'transaction', objectId: 'txn_1', value: {} }]));
  const pass = await dispatchEventBatch(db, 10);
  t.same(pass, { taken: 1, made: 0, claimed: [], overflow: 0, caughtUp: true }, 'taken without a delivery');
  t.same(await deliveredEvents(db), []);
  t.same(await dispatchEventBatch(db, 10), { taken: 0, made: 0, claimed: [], overflow: 0, caughtUp: true }, 'not taken again');
});

t.test('a webhook is sent the events made from its creation on: one made before it, dispatched late, is not sent to it', { timeout: 30_000 }, async (t) => {
  const db = await setup(t);
  const [before] = await commitEvents(db, 1);
  await db.raw(`insert into webhooks (id, org_id, environment, data) values (?, ?, ?, '{"trigger": "processing_status", "status": "active"}')`,
    ['wh_newer', tenant.orgId, tenant.environment]);
  const [after] = await commitEvents(db, 1);
  await dispatchAll(db, 100);
  const found = await db.raw('select webhook_id, event_id from webhook_deliveries');
  const pairs = (list: Array<{ webhook_id: string; event_id: string }>) => list.map((d) => `${d.webhook_id} ${d.event_id}`).sort();
  t.same(pairs(found.rows), pairs([
    { webhook_id: 'wh_dispatch', event_id: before },
    { webhook_id: 'wh_dispatch', event_id: after },
    { webhook_id: 'wh_newer', event_id: after },
  ]));
});

/**
 * A database whose delivery task is known (a first delivery queued, its event returned as
 * `registering`: until then nothing is claimed), then `count` events committed and not dispatched.
 */
async function backlog(t: Test, count: number): Promise<{ db: Db; registering: string[] }> {
  const db = await setup(t);
  const registering = await commitEvents(db, 1);
  await dispatchAll(db, 10);
  await commitEvents(db, count);
  return { db, registering };
}

/** Delivery jobs queued (not claimed) for events other than `except`. */
async function queuedJobsExcept(db: Db, except: string[]): Promise<number> {
  const found = await db.raw(`select count(*)::int as n from graphile_worker._private_jobs where locked_by is null and payload->>'event_id' <> all(?)`, [except]);
  return found.rows[0].n;
}

/**
 * A process with room for `capacity` deliveries of the org at once, each claimed delivery ending a
 * few milliseconds after it was handed over; `claimed()` counts those handed over.
 */
function answeringProcess(capacity: number): { claims: DispatchClaims; claimed: () => number } {
  let running = 0;
  let claimed = 0;
  const freed: Array<() => void> = [];
  const claims: DispatchClaims = {
    claim: (lockedBy) => ({ lockedBy, rooms: [{ org: tenant.orgId, room: Math.max(0, capacity - running) }] }),
    run: async (jobs) => {
      running += jobs.length;
      claimed += jobs.length;
      await new Promise((resolve) => setTimeout(resolve, 5));
      running -= jobs.length;
      for (const wake of freed.splice(0)) wake();
    },
    roomFreed: (withinMs) => new Promise<void>((resolve) => {
      freed.push(resolve);
      setTimeout(resolve, withinMs);
    }),
  };
  return { claims, claimed: () => claimed };
}

/**
 * Runs a dispatch loop claiming for an answering process with room for 20 (answeringProcess) until
 * `jobs` delivery jobs exist; then the jobs queued rather than claimed (but `registering`'s) and
 * the deliveries claimed.
 */
async function pacedBacklog(t: Test, db: Db, registering: string[], jobs: number): Promise<{ queued: number; claimed: number }> {
  const { claims, claimed } = answeringProcess(20);
  const loop = startDispatchLoop(db, {
    batch: 50, idleMs: 5, onError: (error) => t.fail(error.message),
    claims: { claims, lockedBy: () => 'claims-paced', retire: () => t.fail('nothing to retire') },
  });
  await eventually(() => deliveryJobCount(db), (n) => n === jobs, 20_000, 10);
  await loop.stop();
  return { queued: await queuedJobsExcept(db, registering), claimed: claimed() };
}

t.test('a backlog of an org that answers is claimed as its room frees: only the first pass, before any room was known to run out, queues', { timeout: 30_000 }, async (t) => {
  const { db, registering } = await backlog(t, 300);
  const { queued, claimed } = await pacedBacklog(t, db, registering, 301);
  t.equal(queued, 30, 'the first pass (50 events, room for 20) queued 30; every later pass took only what it could claim');
  t.equal(claimed, 270, 'the rest were claimed');
});

t.test('a paced pass takes as many events as make the deliveries it may claim: two webhooks per event, half as many events', { timeout: 30_000 }, async (t) => {
  const db = await setup(t);
  const registering = await commitEvents(db, 1);
  await dispatchAll(db, 10);
  // A second webhook of the trigger: each event of the backlog makes two deliveries.
  await db.raw(`insert into webhooks (id, org_id, environment, data) values (?, ?, ?, '{"trigger": "processing_status", "status": "active"}')`,
    ['wh_second', tenant.orgId, tenant.environment]);
  await commitEvents(db, 300);
  const { queued, claimed } = await pacedBacklog(t, db, registering, 601);
  t.equal(queued, 80, 'the first pass (50 events, 100 deliveries, room for 20) queued 80; every later pass took only the events whose deliveries it could claim');
  t.equal(claimed, 520, 'the rest were claimed');
});

t.test('a backlog stays paced across passes that found another dispatcher\'s pass running', { timeout: 30_000 }, async (t) => {
  const { db, registering } = await backlog(t, 300);
  // Room for 20 that never frees while the test runs: every paced pass claims what it may past its room, an unpaced one claims nothing.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let running = 0;
  const claims: DispatchClaims = {
    claim: (lockedBy) => ({ lockedBy, rooms: [{ org: tenant.orgId, room: Math.max(0, 20 - running) }] }),
    run: async (jobs) => {
      running += jobs.length;
      await held;
    },
    roomFreed: (withinMs) => new Promise<void>((resolve) => setTimeout(resolve, withinMs)),
  };
  const loop = startDispatchLoop(db, {
    batch: 50, idleMs: 5, onError: (error) => t.fail(error.message),
    claims: { claims, lockedBy: () => 'claims-turns', retire: () => t.fail('nothing to retire') },
  });
  // Once the first pass is in, another dispatcher holds the turn for a while: the loop's passes meanwhile take nothing.
  await eventually(() => deliveryJobCount(db), (n) => n >= 51, 10_000, 2);
  // It waits for the pass in hand, as a dispatcher waiting its turn would, then holds the turn.
  const other = await db.transaction();
  await other.raw(`select pg_advisory_xact_lock(hashtext('webhook_dispatch_position'))`);
  t.equal((await other.raw(`select count(*)::int as n from pg_locks where locktype = 'advisory' and granted and pid = pg_backend_pid()`)).rows[0].n, 1, 'the turn is held elsewhere');
  await new Promise((resolve) => setTimeout(resolve, 300));
  await other.commit();
  await eventually(() => deliveryJobCount(db), (n) => n === 301, 20_000, 10);
  release();
  await loop.stop();
  const queued = await queuedJobsExcept(db, registering);
  t.equal(queued, 30, 'only the first pass queued (30 past its room of 20); the passes after the turn came back claimed all they took');
});
