/**
 * SQL of companion jobs: a running delivery job of an org whose receivers answer takes more of the
 * org's due delivery jobs with it (deliver.ts), locked in one statement as graphile-worker locks
 * the jobs it takes (same columns, same worker id), so they run once and a process that dies
 * leaves them to be released like its own (liveness.ts). Jobs in a queue (a resend's line) are
 * never taken along: their order is graphile-worker's to keep. Only jobs of the running job's own
 * tenant (org and environment) are taken, so they run under its tenant gate (workers/main.ts).
 */
import { rows, type Db } from '../../api/db/connection.ts';
import { DELIVER_WEBHOOK_TASK } from '../../api/families/webhooks/deliveryJobs.ts';
import { UNFLUSHED } from './unflushed.ts';

export interface CompanionJob {
  id: string;
  payload: unknown;
}

/**
 * Locks up to `limit` delivery jobs of the tenant that are due and free, in the order
 * graphile-worker would take them (priority, then due time), for the worker `lockedBy`.
 */
export async function takeCompanionJobs(db: Db, tenant: { org: string; environment: string }, lockedBy: string, limit: number): Promise<CompanionJob[]> {
  return rows<CompanionJob>(db,
    `with j as (
       select jobs.id from graphile_worker._private_jobs jobs
        where jobs.is_available and jobs.run_at <= now() and jobs.job_queue_id is null
          and jobs.task_id = (select id from graphile_worker._private_tasks where identifier = '${DELIVER_WEBHOOK_TASK}')
          and jobs.payload->>'org_id' = ? and jobs.payload->>'environment' = ?
        order by jobs.priority, jobs.run_at
        limit ?
        for update skip locked)
     update graphile_worker._private_jobs jobs set attempts = jobs.attempts + 1, locked_by = ?, locked_at = now()
       from j, ${UNFLUSHED} where jobs.id = j.id
     returning jobs.id::text as id, jobs.payload`,
    [tenant.org, tenant.environment, limit, lockedBy]);
}

/** Companion jobs done: deleted, as graphile-worker completes a job (only while still locked by `lockedBy`). */
export async function completeCompanionJobs(db: Db, ids: string[], lockedBy: string): Promise<void> {
  await rows(db, `delete from graphile_worker._private_jobs using ${UNFLUSHED} where id = any(?::bigint[]) and locked_by = ?`, [ids, lockedBy]);
}

/** Companion jobs whose task threw: unlocked to run again later, backing off as graphile-worker fails a job. */
export async function failCompanionJobs(db: Db, failed: Array<{ id: string; message: string }>, lockedBy: string): Promise<void> {
  await rows(db,
    `update graphile_worker._private_jobs jobs
        set last_error = f.message, run_at = greatest(now(), jobs.run_at) + exp(least(jobs.attempts, 10)) * interval '1 second',
            locked_by = null, locked_at = null
       from jsonb_to_recordset(?::jsonb) as f(id bigint, message text), ${UNFLUSHED}
      where jobs.id = f.id and jobs.locked_by = ?`,
    [JSON.stringify(failed), lockedBy]);
}
