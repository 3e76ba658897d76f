/**
 * SQL of webhook dispatch: the events outbox read behind a snapshot position
 * (migrations/20261123000070_dispatch_position.ts), each event turned into one delivery per
 * matching active webhook, each delivery enqueued, and a `skipped` delivery and log per matching
 * disabled webhook (what a resend of the missed events finds), the position moved on: one transaction, so a
 * crash either keeps all of a batch or none of it, and the `on conflict` keeps a delivery from
 * being made twice whatever happens.
 *
 * Dispatchers take turns by a transaction-scoped advisory lock, and one that finds the turn taken
 * does not wait for it: its pass ends at once, taking nothing, and its loop looks again after its
 * idle wait (dispatchLoop.ts). Waiting would hold one of its worker's connections behind the other
 * worker's pass, and then find the outbox emptied by it; with four workers, a backend and a half
 * stood waiting on this lock at any moment. The pass that holds the turn reads the position and
 * the outbox in snapshots taken after it got the lock, and a loop that found the turn taken looks
 * again soon, so no event is left behind. An advisory lock rather than a row lock, because a turn
 * that finds nothing then writes nothing.
 *
 * A pass's commit does not wait for the WAL flush (unflushed.ts): its jobs notify listeners, and
 * PostgreSQL commits one notifying transaction at a time, so a flush waited for there holds every
 * deferral and retry of every worker behind it. A server crash that forgets a pass forgets all
 * that followed it too (a delivery's attempt comes after its pass): the position is back where it
 * was, and the pass is made again, the same deliveries under the same ids.
 *
 * A pass may claim deliveries for the process that makes it (`DispatchClaim`): their jobs are
 * inserted already locked by that process's worker id, as graphile-worker locks a job it takes, and
 * the pass hands them back to be attempted at once (deliver.ts, DispatchClaims). A claimed delivery
 * waits for no job slot and no notification, skips the statement that takes a job and its round
 * trip, and its job never enters the queue's index of available jobs. Its attempt is admitted as
 * any other (rate, tenant slot), and a process that dies holding it has its jobs released like
 * its running ones (workers/liveness.ts). The other deliveries are queued as before.
 */
import { rows, type Db } from '../../api/db/connection.ts';
import { DELIVER_WEBHOOK_TASK, deliveriesInsert, deliveryJobs, FIRST_ATTEMPT_PRIORITY, JOB_PAYLOAD } from '../../api/families/webhooks/deliveryJobs.ts';
import { WEBHOOK_LOG_STATUSES } from '../../api/families/webhook_logs/family.ts';
import { attemptLogId, LOGGED_URL } from './deliveries.ts';
import { UNFLUSHED } from './unflushed.ts';

interface Position {
  /** xmax and in-progress txids of the snapshot every event visible in which is dispatched */
  dispatched_xmax: string;
  dispatched_xip: string[];
  /** the window being taken in pages, or null: the next pass opens one at its own snapshot */
  window_snapshot: string | null;
  window_xmax: string | null;
  window_xip: string[] | null;
  window_after_txid: string | null;
  window_after_seq: string | null;
}

/**
 * What a pass may claim for its process: up to `room` of each listed org's new deliveries (none of
 * an org not listed), locked by `lockedBy` (a worker id its process announces).
 */
export interface DispatchClaim {
  lockedBy: string;
  rooms: Array<{ org: string; room: number }>;
}

/** A claimed delivery's job: its id and payload (a DeliveryJob). */
export interface ClaimedJob {
  id: string;
  payload: unknown;
}

export interface DispatchPass {
  /** events taken */
  taken: number;
  /** the deliveries it made to active webhooks (claimed or queued) */
  made: number;
  /** the deliveries it claimed (DispatchClaim), their jobs locked for the caller */
  claimed: ClaimedJob[];
  /** deliveries of orgs the claim listed that it queued instead: their room ran out */
  overflow: number;
  /** the pass opened its window after its turn came and took all of it: every event committed before then is dispatched */
  caughtUp: boolean;
  /** another dispatcher's pass held the turn: this one took nothing */
  turnTaken?: boolean;
}

/**
 * The events of a window not yet dispatched, in (txid, seq) order: those of transactions in
 * progress at `dispatched`, then those of later ones, each a bounded range of events(txid, seq)
 * (each branch limited too, so a large window is never read whole to find its first page). The
 * second branch's lower bound is one row comparison: beside `txid >= ?` the index would start
 * from the looser of the two. A window opened earlier is narrowed to its snapshot; a window
 * opened now is the statement's own snapshot.
 */
function batchSql(windowOpen: boolean): string {
  const inWindow = windowOpen ? 'and e.txid < ?::xid8 and e.txid <> all(?::xid8[])' : '';
  const columns = 'e.id, e.org_id, e.environment, e.trigger, e.object_type, e.object_id, e.value, e.created_at, e.txid, e.seq';
  return `((select ${columns} from events e where e.txid = any(?::xid8[]) and (e.txid, e.seq) > (?::xid8, ?::bigint) ${inWindow}
            order by e.txid, e.seq limit ?)
           union all
           (select ${columns} from events e where e.txid is not null and (e.txid, e.seq) > (?::xid8, ?::bigint) ${inWindow}
            order by e.txid, e.seq limit ?)
           order by txid, seq limit ?)`;
}

/**
 * The batch's events with each webhook of their trigger in `status` (never the webhook an event is
 * about), as deliveries' rows of a first series. A webhook is sent the events made from its
 * creation on: an event older than it (a new org's first processing account, made with the org
 * before any key could make a webhook) is not sent to it however late the dispatcher comes to it,
 * so what a webhook receives does not depend on how far behind dispatch was; a resend sends it.
 */
function subscribers(status: 'active' | 'disabled'): string {
  return `(select e.org_id, e.environment, w.id as webhook_id, e.id as event_id, 0 as series
             from batch e join webhooks w
               on w.org_id = e.org_id and w.environment = e.environment
              and w.data->>'trigger' = e.trigger and w.data->>'status' = '${status}' and w.id <> e.object_id
              and w.created_at <= e.created_at)`;
}

/** The log of an event a disabled webhook `w` misses (`e` the event): no attempt, nothing sent. */
const SKIPPED_LOG = `jsonb_build_object('webhook_id', w.id, 'event_id', e.id, 'trigger', e.trigger,
  'triggered_on', jsonb_build_object('id', e.object_id, 'object', e.object_type), 'url', ${LOGGED_URL}, 'attempt', 0, 'status', ?::text,
  'http_status', null, 'oauth_status', null, 'duration_ms', null, 'response', null, 'error', 'the webhook is disabled', 'next_attempt_at', null)`;

/** The later of two (txid, seq) positions, as text. */
function later(a: [string, string], b: [string, string]): [string, string] {
  const [ta, sa, tb, sb] = [BigInt(a[0]), BigInt(a[1]), BigInt(b[0]), BigInt(b[1])];
  return ta > tb || (ta === tb && sa > sb) ? a : b;
}

/** The advisory lock key dispatchers take turns by (any constant unique among the project's advisory locks). */
const DISPATCH_TURN = 'webhook_dispatch_position';

/**
 * A pass's first statements, sent with its BEGIN in one round trip: the turn, then the position,
 * read in a snapshot taken after the turn was won (each statement of the message takes its own),
 * so a pass that won it sees every pass before it. The position is read whoever holds the turn:
 * a row, cheaper than a round trip more.
 *
 * The turn's statement also sets the pass's transaction to run its prepared statements by their
 * generic plan. The pass's statement is planned once per connection then, not once a pass: left
 * to choose, Postgres plans it afresh for its parameters whenever those plans look cheaper than
 * the generic one (in the drain of bench/webhooks.ts, every pass), and that planning (1.8 ms, a
 * fifth of the pass at 10k) buys no better plan. The generic plan reads the outbox in its index's
 * order under the limit, finds each event's webhooks by `webhooks_matching` and every other row
 * by its key (test/dispatch-plans.test.ts).
 */
const PASS_OPENING = [
  `select pg_try_advisory_xact_lock(hashtext('${DISPATCH_TURN}')) as mine
     from ${UNFLUSHED}, (select set_config('plan_cache_mode', 'force_generic_plan', true)) as generic`,
  `select pg_snapshot_xmax(dispatched)::text as dispatched_xmax, array(select pg_snapshot_xip(dispatched))::text[] as dispatched_xip,
          window_snapshot::text, pg_snapshot_xmax(window_snapshot)::text as window_xmax,
          case when window_snapshot is not null then array(select pg_snapshot_xip(window_snapshot))::text[] end as window_xip,
          window_after_txid::text, window_after_seq::text
     from webhook_dispatch_position`,
];

/**
 * Whether a pass would find anything to take: a window left open, or an event the dispatched
 * snapshot did not see (the batch's two branches without a window, each the first row in the
 * index's order: as EXISTS, the planner guesses a third of the events match the bound it cannot
 * see, and scans the table for the first; at 1M events that took 200 ms, the index under 0.2 ms). One
 * statement, with no transaction, turn or write: what a caught-up loop asks before it makes
 * another pass, which costs three round trips and a plan of every insert an event could make.
 * An event committed after this statement's snapshot is found by the next look, as by a pass.
 * On a host that takes no writes (a standby now, or fenced in a failover) it answers yes: the
 * pass's write is refused, and the connection looks for the primary, as an idle pass always did.
 */
const PENDING_SQL = `select coalesce((
  select p.window_snapshot is not null
      or (select e.txid from events e
           where e.txid is not null and (e.txid, e.seq) > (pg_snapshot_xmax(p.dispatched), ?::bigint)
           order by e.txid, e.seq limit 1) is not null
      or (select e.txid from events e
           where e.txid is not null and e.txid = any(array(select pg_snapshot_xip(p.dispatched)))
           order by e.txid, e.seq limit 1) is not null
    from webhook_dispatch_position p), true)
  or pg_is_in_recovery() or current_setting('transaction_read_only') = 'on' as pending`;

export async function eventsPending(db: Db): Promise<boolean> {
  // Every seq is positive: (xmax, 0) is just before the first event of a transaction at or past
  // xmax. Bound, the statement is prepared once and its plan kept (planned afresh, it cost
  // Postgres more than it runs).
  const [{ pending }] = await rows<{ pending: boolean }>(db, PENDING_SQL, [0]);
  return pending;
}

/**
 * Dispatches up to `limit` events past the position, in one transaction: their deliveries and
 * jobs, and the new position. A caller that finds another's pass running takes nothing.
 *
 * Where a delivery needs its event's columns (its job's payload, a skipped log), the event is read
 * again by its key, not from the batch: the planner takes the batch, bounded by a limit, for a
 * row or two and joins it by a nested loop, which in a pass of 500 events compared every
 * delivery with every event (250,000 comparisons, the larger part of a draining pass's CPU).
 */
export async function dispatchEventBatch(db: Db, limit: number, claim?: DispatchClaim): Promise<DispatchPass> {
  return db.transaction(async (tx) => {
    const [[turn], [position]] = tx.opened as [[{ mine: boolean }], [Position]];
    // Another dispatcher's pass is running: it takes what there is; this loop looks again after its idle wait.
    if (!turn.mine) return { taken: 0, made: 0, claimed: [], overflow: 0, caughtUp: false, turnTaken: true };
    const windowOpen = position.window_snapshot !== null;
    const after: [string, string] = [position.window_after_txid ?? '0', position.window_after_seq ?? '0'];
    // Every seq is positive: (xmax, 0) is just before the first event of a transaction at or past xmax.
    const afterLater = later(after, [position.dispatched_xmax, '0']);
    const narrowing = windowOpen ? [position.window_xmax, position.window_xip] : [];
    const found = await rows<{ taken: number; made: number; claimed: ClaimedJob[]; overflow: number }>(tx,
      `with batch as ${batchSql(windowOpen)},
       upto as (select coalesce(?::pg_snapshot, pg_current_snapshot()) as snapshot),
       created as (${deliveriesInsert(subscribers('active'), 'pending')}),
       skipped as (${deliveriesInsert(subscribers('disabled'), 'skipped')}),
       skipped_logs as (
         insert into webhook_logs (id, org_id, environment, data)
         select ${attemptLogId('s.id', '0')}, s.org_id, s.environment, ${SKIPPED_LOG}
           from skipped s join events e on e.id = s.event_id join webhooks w on w.id = s.webhook_id
         returning 1),
       -- the task's row exists once the task is registered (a job runner's start, a first job queued): until then nothing is claimed
       task as (select t.id from graphile_worker._private_tasks t where t.identifier = ?),
       made as (
         select d.id, ${JOB_PAYLOAD} as payload, listed,
                listed and row_number() over (partition by d.org_id order by e.txid, e.seq) <= r.room as claimed
           from created d join events e on e.id = d.event_id
           left join jsonb_to_recordset(?::jsonb) as r(org text, room int) on r.org = d.org_id,
           lateral (select ?::text is not null and exists (select from task) and r.org is not null as listed) l),
       claimed as (
         insert into graphile_worker._private_jobs (task_id, payload, priority, run_at, attempts, max_attempts, key, locked_at, locked_by)
         select (select id from task), m.payload, ${FIRST_ATTEMPT_PRIORITY}, now(), 1, 25, 'deliver:' || m.id, now(), ?
           from made m where m.claimed
         returning id, payload),
       jobs as (select ${deliveryJobs('(select id, payload from made where not claimed) j')}
                 where exists (select 1 from made where not claimed)),
       last as (select txid, seq from batch order by txid desc, seq desc limit 1),
       moved as (
         update webhook_dispatch_position p
            set dispatched = case when finished then upto.snapshot else p.dispatched end,
                window_snapshot = case when finished then null else upto.snapshot end,
                window_after_txid = case when finished then null else (select txid from last) end,
                window_after_seq = case when finished then null else (select seq from last) end
           from upto, (select (select count(*) from batch) < ? as finished) f
          -- an empty look at a window of its own changes nothing: the position stays as it is
          where ? or exists (select 1 from batch)
         returning 1)
       select (select count(*) from batch)::int as taken, (select count(*) from made)::int as made, (select count(*) from jobs) as jobs, (select count(*) from moved) as moved,
              (select count(*) from skipped_logs) as skipped, (select count(*) from made where listed and not claimed)::int as overflow,
              coalesce((select json_agg(json_build_object('id', c.id::text, 'payload', c.payload) order by c.id) from claimed c), '[]') as claimed`,
      [position.dispatched_xip, ...after, ...narrowing, limit, ...afterLater, ...narrowing, limit, limit,
        position.window_snapshot, WEBHOOK_LOG_STATUSES.skipped,
        DELIVER_WEBHOOK_TASK, JSON.stringify(claim?.rooms ?? []), claim?.lockedBy ?? null, claim?.lockedBy ?? null,
        limit, windowOpen]);
    const { taken, made, claimed, overflow } = found[0];
    return { taken, made, claimed, overflow, caughtUp: !windowOpen && taken < limit };
  }, { opening: PASS_OPENING });
}
