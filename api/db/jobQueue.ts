/** The job queue as operators see it: jobs waiting to run, by task, and how overdue the oldest is. */
import { rows, type Db } from './connection.ts';

export interface QueueDepth {
  task: string;
  waiting: number;
  /** seconds the oldest due, unlocked job has waited past its run_at */
  lagSeconds: number;
}

export async function queueDepth(db: Db): Promise<QueueDepth[]> {
  const found = await rows<{ task: string; waiting: string; lag: string | null }>(db,
    `select task_identifier as task, count(*) as waiting, extract(epoch from now() - min(run_at)) as lag
       from graphile_worker.jobs
      where locked_at is null and run_at <= now() and attempts < max_attempts
      group by task_identifier`);
  return found.map((r) => ({ task: r.task, waiting: Number(r.waiting), lagSeconds: Math.max(0, Number(r.lag ?? 0)) }));
}
