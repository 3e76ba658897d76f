/**
 * Delivery jobs: what a `deliver_webhook` job carries and how deliveries are enqueued. Shared by
 * the worker (dispatch, retries, deferrals) and the web process (resend), so both enqueue the
 * same payload under the same key.
 */
import { rows, type Db } from '../../db/connection.ts';

/** The graphile-worker task that makes a delivery's attempt (workers/webhooks/deliver.ts). */
export const DELIVER_WEBHOOK_TASK = 'deliver_webhook';

/**
 * What a delivery job carries: the delivery and its event, which never change, so an attempt
 * reads only what can (the delivery's state and its webhook). `d` is the delivery, `e` the event.
 */
export const JOB_PAYLOAD = `json_build_object('delivery_id', d.id, 'org_id', d.org_id, 'environment', d.environment, 'webhook_id', d.webhook_id,
  'event_id', e.id, 'trigger', e.trigger, 'object_type', e.object_type, 'object_id', e.object_id, 'value', e.value,
  'event_created_at', e.created_at, 'sequence', e.seq)`;

/**
 * A delivery's id, as SQL over SQL expressions naming its webhook, event and series: the same
 * delivery always has the same id, so a dispatch pass that runs again makes none twice. It sorts
 * by time as the service's ids do (api/ids.ts: the prefix, 7 digits of the time, 17 more
 * characters): the event's time digits, then 17 hex digits of a hash of the three. New deliveries
 * then land at the right edge of the primary key; a hash alone put each at a random page of it,
 * and in a table of a million deliveries each insert read a page from outside shared buffers and,
 * once a checkpoint had passed, wrote it whole to the WAL (8 kB a delivery, EXPLAIN (WAL)).
 */
export function deliveryId(webhook: string, event: string, series: string): string {
  return `'whd_' || substr(${event}, strpos(${event}, '_') + 1, 7) || substr(md5(${webhook} || ':' || ${event} || ':' || ${series}), 1, 17)`;
}

/**
 * The one insert of deliveries, for dispatch (a first series, `pending` or `skipped` while the
 * webhook is disabled) and for resends (a later series): `source` is SQL yielding `org_id`,
 * `environment`, `webhook_id`, `event_id` and `series` rows, in the order they are to be taken.
 * Returns the new rows' id, tenant, webhook, event and series.
 */
export function deliveriesInsert(source: string, state: 'pending' | 'skipped'): string {
  const due = state === 'pending' ? 'now(), null' : 'null, now()';
  return `insert into webhook_deliveries (id, org_id, environment, webhook_id, event_id, series, state, next_attempt_at, finished_at)
    select ${deliveryId('s.webhook_id', 's.event_id', 's.series::text')}, s.org_id, s.environment, s.webhook_id,
           s.event_id, s.series, '${state}', ${due}
      from ${source} s
    on conflict (webhook_id, event_id, series) do nothing
    returning id, org_id, environment, webhook_id, event_id, series`;
}

/** A delivery job's payload (JOB_PAYLOAD): the delivery and its event. */
export interface DeliveryJob {
  delivery_id: string;
  org_id: string;
  environment: string;
  webhook_id: string;
  event_id: string;
  trigger: string;
  object_type: string;
  object_id: string;
  value: Record<string, unknown>;
  /** as JSON carries it: an ISO timestamp */
  event_created_at: string | Date;
  /**
   * The event's place in the outbox (`events.seq`), sent as `sequence`. For one object it rises in
   * the order its changes committed: every writer of an event about an object holds the object's
   * row lock (a create makes the row; an update selects it `for update` first), so a later change
   * draws its number after the earlier one committed, from a sequence without a per-session cache.
   */
  sequence: number;
  /** a webhook's test event (api/families/webhooks/testEvent.ts); absent from every other delivery's job */
  test?: true;
  /** a rate-limited delivery deferred to its slot: the slot it holds (epoch ms, the database's clock) */
  rate_slot_ms?: number;
}

/** The priority of the first attempts of an org's first turn: the front of the queue (graphile-worker takes lower numbers first). */
export const FIRST_ATTEMPT_PRIORITY = 0;
/**
 * Where a delivery's later jobs (a retry, a deferral) queue: behind first attempts that are due
 * (graphile-worker takes lower priority numbers first), so an org whose receivers fail or hang,
 * however many deliveries it has waiting, never stands in front of another org's new delivery.
 */
export const LATER_ATTEMPT_PRIORITY = 10;
/**
 * A rate-limited delivery coming back for the slot it holds goes ahead of everything: taken late,
 * past its slot, it must give the slot up and queue again at the end of the webhook's schedule.
 */
export const RATE_SLOT_PRIORITY = -1;
/**
 * First attempts enqueued together take turns by org: each org's first this-many go first, its
 * next this-many after every org's first, and so on (up to LATER_ATTEMPT_PRIORITY - 1), so one
 * org's burst of events to many webhooks does not stand in front of another org's one delivery.
 */
const FIRST_ATTEMPTS_PER_TURN = 4;

/**
 * Job specs for deliveries, as SQL over a set of rows named `source` with `id` (the delivery) and
 * `payload`. The key makes one job per delivery: a later job of the delivery (a retry, a deferral)
 * takes the key over, and the earlier one, if it is still locked, never runs again (graphile-worker
 * clears its key and spends its attempts): its holder completes it, or, if the holder died, the
 * release of the holder's jobs deletes it (workers/liveness.ts). `later`: a retry or a deferral
 * (LATER_ATTEMPT_PRIORITY), or the priority given. `line`: SQL naming a job queue the first
 * attempts join (graphile-worker runs one job of a queue at a time, in order), or null; a
 * delivery's later jobs never join one, so a retry holds no line up.
 */
export function deliveryJobs(source: string, runAt = 'null', later: boolean | number = false, line = 'null'): string {
  if (later !== false) {
    return `graphile_worker.add_jobs(array(
    select row('${DELIVER_WEBHOOK_TASK}', payload, null, ${runAt}, 25, 'deliver:' || id, ${later === true ? LATER_ATTEMPT_PRIORITY : later}, null)::graphile_worker.job_spec
      from ${source}))`;
  }
  // The jobs keep the source's order (a resend's is commit order); the turn is counted within it.
  return `graphile_worker.add_jobs(array(
    select row('${DELIVER_WEBHOOK_TASK}', payload, ${line}, ${runAt}, 25, 'deliver:' || id,
               least(${FIRST_ATTEMPT_PRIORITY} + (row_number() over (partition by payload->>'org_id' order by position) - 1) / ${FIRST_ATTEMPTS_PER_TURN}, ${LATER_ATTEMPT_PRIORITY - 1})::int,
               null)::graphile_worker.job_spec
      from (select *, row_number() over () as position from ${source}) numbered
     order by position))`;
}

/**
 * Enqueues the first attempt of each delivery (ones just created: a resend, a `test` one), in the order of their
 * events, in one line per webhook: an event's first attempt starts once the one before it has been
 * answered (delivered, or failed with its retry scheduled). The delivery job waits for its rate and
 * tenant slots in place rather than leaving the line.
 */
export async function enqueueDeliveries(db: Db, deliveryIds: string[], test = false): Promise<void> {
  if (deliveryIds.length === 0) return;
  // A test delivery's job says so, and its retries carry the job on; no other job grows a field.
  const payload = test ? `(${JOB_PAYLOAD}::jsonb || '{"test": true}')::json` : JOB_PAYLOAD;
  await rows(db,
    `select ${deliveryJobs(`(select d.id, ${payload} as payload
       from webhook_deliveries d join events e on e.id = d.event_id where d.id = any(?::text[]) order by e.seq) j`, 'null', false,
    `'resend:' || (payload->>'webhook_id')`)}`,
    [deliveryIds]);
}
