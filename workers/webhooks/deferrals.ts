/**
 * SQL of deferred deliveries: an org with no room in this worker has its delivery's job moved later,
 * and back. None of these commits waits for a WAL flush (unflushed.ts): forgetting one leaves the
 * delivery's earlier job, which runs again. graphile-worker's job functions notify listeners, and
 * PostgreSQL lets one notifying transaction commit at a time: a commit that waited for its flush
 * there held every other worker's deferral behind it.
 */
import { rows, type Db } from '../../api/db/connection.ts';
import { deliveryJobs, FIRST_ATTEMPT_PRIORITY, type DeliveryJob } from '../../api/families/webhooks/deliveryJobs.ts';
import { UNFLUSHED } from './unflushed.ts';

/**
 * Defers a delivery whose org has no room in this worker: a new job for it at `runAt` under the
 * same key (add_jobs takes the key from the running job, which then completes), so there is still
 * one job per delivery, and its attempts, logs and retry budget are untouched. `priority`: a later
 * attempt's (true), or the one given (a rate slot's). Returns the job id.
 */
export async function deferDelivery(db: Db, job: DeliveryJob, runAt: Date, priority: number | true = true): Promise<string | null> {
  const found = await rows<{ id: string }>(db,
    `select id::text as id from ${deliveryJobs('(select ?::text as id, ?::json as payload) d', '?::timestamptz', priority)}, ${UNFLUSHED}`,
    [runAt.toISOString(), job.delivery_id, JSON.stringify(job)]);
  return found[0]?.id ?? null;
}

/**
 * Brings a deferred delivery's job forward to now; false when it is running or gone already.
 * `ahead`: its org's receivers are not slow now, so the job takes its place among the first
 * attempts again (FIRST_ATTEMPT_PRIORITY, due since its event was made): it is taken before the
 * org's deliveries made after it. Left behind them, it would wait for as long as its org's new
 * deliveries kept coming. The workers are told of it as of a new job (graphile-worker's
 * `jobs:insert`), so an idle one takes it at once instead of at its next poll for due jobs.
 */
export async function wakeDeferredDelivery(db: Db, jobId: string, ahead = false): Promise<boolean> {
  const dueAt = ahead
    ? `least(now(), (select (payload->>'event_created_at')::timestamptz from graphile_worker._private_jobs where id = ?::bigint))`
    : 'now()';
  const found = await rows<{ n: number }>(db,
    `with woken as (select id from graphile_worker.reschedule_jobs(array[?::bigint], run_at => ${dueAt}, priority => ?::int), ${UNFLUSHED}),
          told as (select pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":1}') from woken)
     select (select count(*)::int from woken) as n, (select count(*) from told) as told`,
    ahead ? [jobId, jobId, FIRST_ATTEMPT_PRIORITY] : [jobId, null]);
  return found[0].n > 0;
}

/** Drops a delivery's waiting job (a detached attempt's watch job, once the attempt's answer is recorded). */
export async function dropWaitingDeliveryJob(db: Db, deliveryId: string): Promise<void> {
  await rows(db, `select graphile_worker.remove_job('deliver:' || ?) from ${UNFLUSHED}`, [deliveryId]);
}
