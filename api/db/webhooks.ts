/** SQL of webhook dispatch and delivery: matching, delivery series, attempt logs, liveness. */
import { newId } from '../ids.ts';
import { rows, type Db } from './connection.ts';

/** Job specs for deliveries, as SQL over a set of delivery ids named `source`. */
function deliveryJobs(source: string, runAt = 'null'): string {
  return `graphile_worker.add_jobs(array(
    select row('deliver_webhook', json_build_object('delivery_id', id), null, ${runAt}, 25, 'deliver:' || id, null, null)::graphile_worker.job_spec
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
       select id, org_id, environment, trigger from events
        where dispatched_at is null order by seq limit ? for update skip locked),
     created as (
       insert into webhook_deliveries (id, org_id, environment, webhook_id, event_id, next_attempt_at)
       select 'whd_' || substr(md5(w.id || e.id), 1, 24), e.org_id, e.environment, w.id, e.id, now()
         from batch e join webhooks w
           on w.org_id = e.org_id and w.environment = e.environment
          and w.data->>'trigger' = e.trigger and w.data->>'status' = 'active'
       on conflict (webhook_id, event_id, series) do nothing
       returning id),
     jobs as (select ${deliveryJobs('created')} where exists (select 1 from created)),
     marked as (update events set dispatched_at = now() from batch where events.id = batch.id returning 1)
     select (select count(*) from marked)::int as taken, (select count(*) from jobs) as jobs`,
    [limit]);
  return found[0].taken;
}

export async function enqueueDeliveries(db: Db, deliveryIds: string[]): Promise<void> {
  if (deliveryIds.length === 0) return;
  await rows(db, `select ${deliveryJobs('unnest(?::text[]) as id')}`, [deliveryIds]);
}

/**
 * Defers a delivery whose org has no room in this worker: a new job for it at `runAt` under the
 * same key (add_jobs takes the key from the running job, which then completes), so there is still
 * one job per delivery, and its attempts, logs and retry budget are untouched. Returns the job id.
 */
export async function deferDelivery(db: Db, deliveryId: string, runAt: Date): Promise<string | null> {
  const found = await rows<{ id: string }>(db,
    `select id::text as id from ${deliveryJobs('(select ?::text as id) d', '?::timestamptz')}`,
    [runAt.toISOString(), deliveryId]);
  return found[0]?.id ?? null;
}

/** Brings a deferred delivery's job forward to now; false when it is running or gone already. */
export async function wakeDeferredDelivery(db: Db, jobId: string): Promise<boolean> {
  const found = await rows<{ n: number }>(db,
    'select count(*)::int as n from graphile_worker.reschedule_jobs(array[?::bigint], run_at => now())', [jobId]);
  return found[0].n > 0;
}

export interface DeliveryContext {
  delivery_id: string;
  state: string;
  attempts: number;
  series: number;
  org_id: string;
  environment: string;
  webhook_id: string;
  webhook: Record<string, unknown>;
  event_id: string;
  trigger: string;
  object_type: string;
  object_id: string;
  value: Record<string, unknown>;
  event_created_at: Date;
}

export async function loadDelivery(db: Db, deliveryId: string): Promise<DeliveryContext | null> {
  const found = await rows<DeliveryContext>(db,
    `select d.id as delivery_id, d.state, d.attempts, d.series, d.org_id, d.environment, d.webhook_id, w.data as webhook,
            e.id as event_id, e.trigger, e.object_type, e.object_id, e.value, e.created_at as event_created_at
       from webhook_deliveries d join webhooks w on w.id = d.webhook_id join events e on e.id = d.event_id
      where d.id = ?`,
    [deliveryId]);
  return found[0] ?? null;
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

/** Records an attempt and moves the delivery on (next job, or the webhook's streak reset): one statement. */
export async function recordAttempt(db: Db, delivery: DeliveryContext, log: AttemptLog, outcome: { state: 'pending' | 'delivered' | 'failed' }): Promise<void> {
  const nextAt = log.nextAttemptAt?.toISOString() ?? null;
  await rows(db,
    `with logged as (
       insert into webhook_logs (id, org_id, environment, data) values (?, ?, ?, ?::jsonb) returning 1),
     moved as (
       update webhook_deliveries set attempts = ?, state = ?, next_attempt_at = ?::timestamptz,
              finished_at = case when ? = 'pending' then null else now() end
        where id = ? returning id),
     jobs as (select ${deliveryJobs('moved', '?::timestamptz')} where ? = 'pending'),
     recovered as (
       update webhooks set data = data - 'failing_since'
        where id = ? and ? = 'delivered' and jsonb_exists(data, 'failing_since') returning 1)
     select (select count(*) from logged) + (select count(*) from jobs) + (select count(*) from recovered) as n`,
    [newId('whl'), delivery.org_id, delivery.environment, JSON.stringify({
      webhook_id: log.webhookId, event_id: log.eventId, trigger: log.trigger, triggered_on: log.triggeredOn, url: log.url,
      http_status: log.httpStatus, oauth_status: log.oauthStatus, attempt: log.attempt, duration_ms: log.durationMs,
      response: log.response, error: log.error, next_attempt_at: nextAt,
    }),
    log.attempt, outcome.state, nextAt, outcome.state, delivery.delivery_id,
    nextAt, outcome.state,
    delivery.webhook_id, outcome.state]);
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
