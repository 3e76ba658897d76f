/**
 * SQL of worker liveness: processes announce themselves, and jobs locked by one that stopped
 * announcing (or never did) are released for another to run.
 */
import { rows, type Db } from '../api/db/connection.ts';
import { DELIVER_WEBHOOK_TASK } from '../api/families/webhooks/deliveryJobs.ts';

/** These worker processes are alive now. */
export async function heartbeat(db: Db, workerIds: string[]): Promise<void> {
  if (workerIds.length === 0) return;
  await rows(db,
    `insert into worker_heartbeats (worker_id, seen_at) select id, now() from unnest(?::text[]) as id
     on conflict (worker_id) do update set seen_at = now()`,
    [workerIds]);
}

/**
 * Unlocks the jobs of workers silent for `silentForMs` (deleting those superseded while held);
 * returns how many jobs were released. A silent worker that holds none (a process that stopped
 * with its work done) is only forgotten.
 */
export async function releaseDeadWorkers(db: Db, silentForMs: number): Promise<number> {
  return db.transaction(async (tx) => {
    const silent = await rows<{ worker_id: string }>(tx,
      `delete from worker_heartbeats where seen_at < now() - make_interval(secs => ? / 1000.0) returning worker_id`, [silentForMs]);
    // Also holders that never announced themselves (killed before their first heartbeat). Read
    // through graphile-worker's public `jobs` view, not its private table.
    const unknown = await rows<{ worker_id: string }>(tx,
      `select distinct locked_by as worker_id from graphile_worker.jobs
        where locked_by is not null and locked_at < now() - make_interval(secs => ? / 1000.0)
          and locked_by not in (select worker_id from worker_heartbeats)`, [silentForMs]);
    // A silent worker's old locks make it an unannounced holder too once its heartbeat is deleted: count it once.
    const dead = [...new Set([...silent, ...unknown].map((d) => d.worker_id))];
    if (dead.length === 0) return 0;
    const [held] = await rows<{ n: number }>(tx, 'select count(*)::int as n from graphile_worker.jobs where locked_by = any(?::text[])', [dead]);
    if (held.n === 0) return 0;
    // A delivery job whose key a later job of its delivery took over while it was held (a retry,
    // a deferral, a watch job) never runs again: graphile-worker cleared its key and spent its
    // attempts, leaving it to its holder to complete. Deleted here, as its holder would have; the
    // delivery goes on in the job that took the key. Only delivery jobs, which always carry a key,
    // so a cleared one was taken over (another task's keyless job at its last attempt is kept).
    await rows(tx,
      `delete from graphile_worker._private_jobs jobs using graphile_worker._private_tasks tasks
        where tasks.id = jobs.task_id and tasks.identifier = ? and jobs.locked_by = any(?::text[])
          and jobs.key is null and jobs.attempts >= jobs.max_attempts`,
      [DELIVER_WEBHOOK_TASK, dead]);
    await rows(tx, 'select graphile_worker.force_unlock_workers(?::text[])', [dead]);
    return held.n;
  });
}

/** These worker ids are gone (their process is stopping, its jobs done): no one need wait out their silence. */
export async function forgetWorkers(db: Db, workerIds: string[]): Promise<void> {
  if (workerIds.length === 0) return;
  await rows(db, 'delete from worker_heartbeats where worker_id = any(?::text[])', [workerIds]);
}
