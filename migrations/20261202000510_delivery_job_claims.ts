import type { Knex } from 'knex';

/**
 * A running delivery job takes more of its tenant's due delivery jobs along
 * (workers/webhooks/companionJobs.ts). The planner cannot estimate the tenant filter (two fields of
 * a json payload: one row in a thousand, by default), so it expects one match or none and reads
 * every available job, parsing each payload, to sort them: a claim of 50 from a backlog of 10,000
 * took 140–280 ms and held most of the database's CPU during a drain, growing with the backlog.
 * This function plans the same statement without bitmap or sequential scans: it walks the queue's
 * own index in graphile-worker's order (priority, then due time) and stops at the limit, a few
 * hundred microseconds whatever the backlog. plpgsql, so that its body is checked only when it
 * runs: graphile-worker's schema is installed after our migrations.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create function take_delivery_jobs(tenant_org text, tenant_environment text, worker text, most int, task text)
      returns table (id bigint, payload json)
      language plpgsql
      set enable_bitmapscan = off
      set enable_seqscan = off
    as $$
    begin
      return query
      with j as (
        select jobs.id from graphile_worker._private_jobs jobs
         where jobs.is_available and jobs.run_at <= now() and jobs.job_queue_id is null
           and jobs.task_id = (select t.id from graphile_worker._private_tasks t where t.identifier = task)
           and jobs.payload->>'org_id' = tenant_org and jobs.payload->>'environment' = tenant_environment
         order by jobs.priority, jobs.run_at
         limit most
         for update skip locked)
      update graphile_worker._private_jobs jobs set attempts = jobs.attempts + 1, locked_by = worker, locked_at = now()
        from j where jobs.id = j.id
      returning jobs.id, jobs.payload;
    end
    $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function take_delivery_jobs(text, text, text, int, text)');
}
