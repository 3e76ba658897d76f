/** SQL of webhook dispatch and delivery: matching, delivery series, attempt logs, liveness. */
import { newId } from '../ids.ts';
import { rows, type Db } from './connection.ts';

/**
 * What a delivery job carries: the delivery and its event, which never change, so an attempt
 * reads only what can (the delivery's state and its webhook). `d` is the delivery, `e` the event.
 */
const JOB_PAYLOAD = `json_build_object('delivery_id', d.id, 'org_id', d.org_id, 'environment', d.environment, 'webhook_id', d.webhook_id,
  'event_id', e.id, 'trigger', e.trigger, 'object_type', e.object_type, 'object_id', e.object_id, 'value', e.value,
  'event_created_at', e.created_at)`;

/**
 * Job specs for deliveries, as SQL over a set of rows named `source` with `id` (the delivery) and
 * `payload`. The key makes one job per delivery: a later job of the delivery (a retry, a deferral)
 * takes the key over, and the earlier one, if it is still locked by a process that died, never runs again.
 */
function deliveryJobs(source: string, runAt = 'null'): string {
  return `graphile_worker.add_jobs(array(
    select row('deliver_webhook', payload, null, ${runAt}, 25, 'deliver:' || id, null, null)::graphile_worker.job_spec
      from ${source}))`;
}

/**
 * Dispatches up to `limit` undispatched events in commit order: one delivery per matching active
 * webhook (never twice for an event), each enqueued, the events marked. One statement; concurrent
 * dispatchers take disjoint batches (skip locked). Returns how many events it took.
 */
export async function dispatchPendingEvents(db: Db, limit: number): Promise<number> {
  const found = await rows<{ taken: number }>(db,
    `with batch as (
       select id, org_id, environment, trigger, object_type, object_id, value, created_at from events
        where dispatched_at is null order by seq limit ? for update skip locked),
     created as (
       insert into webhook_deliveries (id, org_id, environment, webhook_id, event_id, next_attempt_at)
       select 'whd_' || substr(md5(w.id || e.id), 1, 24), e.org_id, e.environment, w.id, e.id, now()
         from batch e join webhooks w
           on w.org_id = e.org_id and w.environment = e.environment
          and w.data->>'trigger' = e.trigger and w.data->>'status' = 'active'
       on conflict (webhook_id, event_id, series) do nothing
       returning id, org_id, environment, webhook_id, event_id),
     jobs as (select ${deliveryJobs(`(select d.id, ${JOB_PAYLOAD} as payload from created d join batch e on e.id = d.event_id) j`)}
               where exists (select 1 from created)),
     marked as (update events set dispatched_at = now() from batch where events.id = batch.id returning 1)
     select (select count(*) from marked)::int as taken, (select count(*) from jobs) as jobs`,
    [limit]);
  return found[0].taken;
}

export async function enqueueDeliveries(db: Db, deliveryIds: string[]): Promise<void> {
  if (deliveryIds.length === 0) return;
  await rows(db,
    `select ${deliveryJobs(`(select d.id, ${JOB_PAYLOAD} as payload
       from webhook_deliveries d join events e on e.id = d.event_id where d.id = any(?::text[])) j`)}`,
    [deliveryIds]);
}

/**
 * Defers a delivery whose org has no room in this worker: a new job for it at `runAt` under the
 * same key (add_jobs takes the key from the running job, which then completes), so there is still
 * one job per delivery, and its attempts, logs and retry budget are untouched. Returns the job id.
 */
export async function deferDelivery(db: Db, job: DeliveryJob, runAt: Date): Promise<string | null> {
  const found = await rows<{ id: string }>(db,
    `select id::text as id from ${deliveryJobs('(select ?::text as id, ?::json as payload) d', '?::timestamptz')}`,
    [runAt.toISOString(), job.delivery_id, JSON.stringify(job)]);
  return found[0]?.id ?? null;
}

/** Brings a deferred delivery's job forward to now; false when it is running or gone already. */
export async function wakeDeferredDelivery(db: Db, jobId: string): Promise<boolean> {
  const found = await rows<{ n: number }>(db,
    'select count(*)::int as n from graphile_worker.reschedule_jobs(array[?::bigint], run_at => now())', [jobId]);
  return found[0].n > 0;
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
}

/** What can change between attempts, read at each one. */
export interface DeliveryState {
  delivery_id: string;
  state: string;
  attempts: number;
  webhook: Record<string, unknown>;
}

/** The states and webhooks of many deliveries in one query; missing ones (deleted) are absent. */
export async function loadDeliveryStates(db: Db, deliveryIds: string[]): Promise<DeliveryState[]> {
  return rows<DeliveryState>(db,
    `select d.id as delivery_id, d.state, d.attempts, w.data as webhook
       from webhook_deliveries d join webhooks w on w.id = d.webhook_id
      where d.id = any(?::text[])`,
    [deliveryIds]);
}

/** The job payload of a delivery, for a job enqueued before payloads carried it. */
export async function loadDeliveryJob(db: Db, deliveryId: string): Promise<DeliveryJob | null> {
  const found = await rows<{ payload: DeliveryJob }>(db,
    `select ${JOB_PAYLOAD} as payload from webhook_deliveries d join events e on e.id = d.event_id where d.id = ?`, [deliveryId]);
  return found[0]?.payload ?? null;
}

export interface AttemptLog {
  webhookId: string;
  eventId: string;
  trigger: string;
  triggeredOn: Record<string, unknown>;
  url: string;
  httpStatus: number | null;
  oauthStatus: number | null;
  attempt: number;
  durationMs: number;
  response: string | null;
  error: string | null;
  nextAttemptAt: Date | null;
}

export interface AttemptRecord {
  job: DeliveryJob;
  log: AttemptLog;
  state: 'pending' | 'delivered' | 'failed';
}

/**
 * Records attempts and moves their deliveries on, many in one statement: each attempt's log, the
 * delivery's state, the next job of a delivery still pending (same key, carrying the same payload),
 * and the failure streak of a webhook that delivered reset (rows locked in id order, so concurrent
 * batches cannot deadlock on them).
 */
export async function recordAttempts(db: Db, records: AttemptRecord[]): Promise<void> {
  const input = records.map(({ job, log, state }) => {
    const nextAt = log.nextAttemptAt?.toISOString() ?? null;
    return {
      log_id: newId('whl'), org_id: job.org_id, environment: job.environment, delivery_id: job.delivery_id, webhook_id: job.webhook_id,
      attempt: log.attempt, state, next_at: nextAt, payload: job,
      log: {
        webhook_id: log.webhookId, event_id: log.eventId, trigger: log.trigger, triggered_on: log.triggeredOn, url: log.url,
        http_status: log.httpStatus, oauth_status: log.oauthStatus, attempt: log.attempt, duration_ms: log.durationMs,
        response: log.response, error: log.error, next_attempt_at: nextAt,
      },
    };
  });
  await rows(db,
    `with input as (
       select * from jsonb_to_recordset(?::jsonb) as r(log_id text, org_id text, environment text, delivery_id text,
         webhook_id text, attempt int, state text, next_at timestamptz, payload json, log jsonb)),
     logged as (
       insert into webhook_logs (id, org_id, environment, data) select log_id, org_id, environment, log from input returning 1),
     moved as (
       update webhook_deliveries d set attempts = i.attempt, state = i.state, next_attempt_at = i.next_at,
              finished_at = case when i.state = 'pending' then null else now() end
         from input i where d.id = i.delivery_id
       returning d.id, i.payload, i.next_at, i.state),
     jobs as (select ${deliveryJobs("(select * from moved where state = 'pending') m", 'next_at')}
               where exists (select 1 from moved where state = 'pending')),
     recovered as (
       update webhooks w set data = w.data - 'failing_since'
        where w.id in (select id from webhooks
                        where id in (select webhook_id from input where state = 'delivered') and jsonb_exists(data, 'failing_since')
                        order by id for update)
       returning 1)
     select (select count(*) from logged) + (select count(*) from jobs) + (select count(*) from recovered) as n`,
    [JSON.stringify(input)]);
}

/** A schedule exhausted: the webhook's failure streak starts (or goes on); past the limit it is disabled. */
export async function noteExhausted(db: Db, webhookId: string, disableAfterMs: number): Promise<boolean> {
  const found = await rows<{ disabled: boolean }>(db,
    `update webhooks set data = data
        || jsonb_build_object('failing_since', coalesce(data->>'failing_since', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
        || case when coalesce((data->>'failing_since')::timestamptz, now()) <= now() - make_interval(secs => ? / 1000.0)
                then '{"status": "disabled", "disabled_reason": "failing"}'::jsonb else '{}'::jsonb end,
        modified_at = now()
      where id = ?
      returning data->>'status' = 'disabled' as disabled`,
    [disableAfterMs, webhookId]);
  return found[0]?.disabled ?? false;
}

export async function disableWebhook(db: Db, webhookId: string, reason: string): Promise<void> {
  await rows(db,
    `update webhooks set data = data || jsonb_build_object('status', 'disabled', 'disabled_reason', ?::text), modified_at = now() where id = ?`,
    [reason, webhookId]);
}

export async function cancelDelivery(db: Db, deliveryId: string): Promise<void> {
  await rows(db, `update webhook_deliveries set state = 'cancelled', finished_at = now() where id = ? and state = 'pending'`, [deliveryId]);
}

/** Resend: a new attempt series for each chosen event of this webhook's trigger. */
export async function resendEvents(db: Db, tenant: { orgId: string; environment: string }, webhookId: string, filter: { eventId?: string; since?: Date; until?: Date }): Promise<Array<{ id: string; event_id: string; series: number }>> {
  return db.transaction(async (tx) => {
    const created = await rows<{ id: string; event_id: string; series: number }>(tx,
      `insert into webhook_deliveries (id, org_id, environment, webhook_id, event_id, series, next_attempt_at)
       select 'whd_' || substr(md5(w.id || e.id || s.series::text), 1, 24), e.org_id, e.environment, w.id, e.id, s.series, now()
         from webhooks w
         join events e on e.org_id = w.org_id and e.environment = w.environment and e.trigger = w.data->>'trigger'
         cross join lateral (select coalesce(max(series) + 1, 0) as series from webhook_deliveries d where d.webhook_id = w.id and d.event_id = e.id) s
        where w.id = ? and w.org_id = ? and w.environment = ?
          and (?::text is null or e.id = ?) and (?::timestamptz is null or e.created_at >= ?) and (?::timestamptz is null or e.created_at <= ?)
        order by e.seq
        limit 10000
       returning id, event_id, series`,
      [webhookId, tenant.orgId, tenant.environment, filter.eventId ?? null, filter.eventId ?? null, filter.since ?? null, filter.since ?? null, filter.until ?? null, filter.until ?? null]);
    await enqueueDeliveries(tx, created.map((d) => d.id));
    return created;
  });
}

/** Liveness of worker processes: jobs locked by a worker that stopped announcing itself are released. */
export async function heartbeat(db: Db, workerIds: string[]): Promise<void> {
  if (workerIds.length === 0) return;
  await rows(db,
    `insert into worker_heartbeats (worker_id, seen_at) select id, now() from unnest(?::text[]) as id
     on conflict (worker_id) do update set seen_at = now()`,
    [workerIds]);
}

export async function releaseDeadWorkers(db: Db, silentForMs: number): Promise<number> {
  return db.transaction(async (tx) => {
    const silent = await rows<{ worker_id: string }>(tx,
      `delete from worker_heartbeats where seen_at < now() - make_interval(secs => ? / 1000.0) returning worker_id`, [silentForMs]);
    // Also holders that never announced themselves (killed before their first heartbeat).
    const unknown = await rows<{ worker_id: string }>(tx,
      `select distinct locked_by as worker_id from graphile_worker._private_jobs
        where locked_by is not null and locked_at < now() - make_interval(secs => ? / 1000.0)
          and locked_by not in (select worker_id from worker_heartbeats)`, [silentForMs]);
    const dead = [...silent, ...unknown];
    if (dead.length) await rows(tx, 'select graphile_worker.force_unlock_workers(?::text[])', [dead.map((d) => d.worker_id)]);
    return dead.length;
  });
}
