import type { Knex } from 'knex';
import { JOB_PAYLOAD } from '../api/families/webhooks/deliveryJobs.ts';

/**
 * Every job is one the current worker runs as it stands: `dispatch_events` jobs left from before
 * the dispatcher followed the outbox on its own (20261123000080) are removed (the dispatcher takes
 * their events anyway), and a `deliver_webhook` job that names only its delivery is given the
 * delivery's event, as every job enqueued since carries it (its `sequence` too, which jobs queued by
 * earlier releases lack); one whose delivery is gone is removed.
 * graphile-worker's schema is installed after these migrations, so a new database has no jobs.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    do $$
    begin
      if to_regclass('graphile_worker._private_jobs') is null then return; end if;
      update graphile_worker._private_jobs j set payload = (
               select ${JOB_PAYLOAD} from webhook_deliveries d join events e on e.id = d.event_id where d.id = j.payload->>'delivery_id')
        from graphile_worker._private_tasks k
       where k.id = j.task_id and k.identifier = 'deliver_webhook' and j.payload->>'sequence' is null
         and exists (select 1 from webhook_deliveries d where d.id = j.payload->>'delivery_id');
      perform graphile_worker.complete_jobs(array(
        select j.id from graphile_worker._private_jobs j join graphile_worker._private_tasks k on k.id = j.task_id
         where k.identifier = 'dispatch_events' or (k.identifier = 'deliver_webhook' and j.payload->>'sequence' is null)));
    end $$;
  `);
}

export async function down(): Promise<void> {
  // Nothing to undo: the jobs rewritten run under either version.
}
