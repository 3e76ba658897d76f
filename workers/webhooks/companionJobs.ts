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
 * graphile-worker would take them (priority, then due time), for the worker `lockedBy`: one call
 * of `take_delivery_jobs` (migrations/20261202000510_delivery_job_claims.ts), which walks the
 * queue's index instead of reading every waiting job.
 */
export async function takeCompanionJobs(db: Db, tenant: { org: string; environment: string }, lockedBy: string, limit: number): Promise<CompanionJob[]> {
  return rows<CompanionJob>(db,
    `select taken.id::text as id, taken.payload from take_delivery_jobs(?, ?, ?, ?, ?) taken, ${UNFLUSHED}`,
    [tenant.org, tenant.environment, lockedBy, limit, DELIVER_WEBHOOK_TASK]);
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
