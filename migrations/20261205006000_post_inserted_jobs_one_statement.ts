import type { Knex } from 'knex';

/**
 * The ledger trigger on inserted transactions runs once per INSERT statement, and a card payment's
 * statement (api/families/transactions/repository.ts: insertPayments) is one: what the trigger
 * costs per statement is paid per payment whenever payments do not arrive together. Each SQL
 * statement a PL/pgSQL trigger runs is an executor start, a scan of the transition table and an
 * executor end, whatever it finds. The instant-funding job and the sandbox card network's
 * chargeback job are asked for by one statement over the new rows: each row marked pending is
 * joined to both jobs, and a job is added where its own condition holds, with its own task,
 * payload, run time (instant funding gives none: now) and job key. The trigger runs two
 * statements per INSERT, the ledger legs' and the jobs'.
 *
 * The ledger legs are the function's as they stand: world, fees and the processing account's
 * pending bucket for each row the funding trigger marked pending, checked to balance by
 * `ledger_entries_balance_check`.
 */
/** The ledger legs of the rows marked pending, as the function posts them. */
const LEDGER_LEGS = `
    with postings as (
      select 'process:' || n.id as posting, n.id as transaction_id, n.org_id, n.environment,
             n.data->>'processing_id' as account_id,
             ledger_gross(n.type, (n.data->>'amount')::bigint) as gross, (n.data->>'fee')::bigint as fee, 'pending' as bucket
        from new_rows n
       where n.data->>'funding_status' = 'pending'
    )
    insert into ledger_entries (org_id, environment, account_id, transaction_id, posting, bucket, amount)
    select p.org_id, p.environment, p.account_id, p.transaction_id, p.posting, leg.bucket, leg.amount
      from postings p
      cross join lateral (values ('world', -p.gross), ('fees', p.fee), (p.bucket, p.gross - p.fee)) as leg(bucket, amount)
     where leg.amount <> 0 and p.account_id is not null;`;

const postInserted = (jobs: string) => `
  create or replace function transaction_post_inserted() returns trigger language plpgsql as $$
  begin${LEDGER_LEGS}
${jobs}
    return null;
  end $$;`;

const ONE_JOBS_STATEMENT = postInserted(`
    -- Instant funding, and the sandbox card network's chargebacks about a second after processing.
    perform graphile_worker.add_job(job.task, json_build_object('transaction_id', n.id), run_at => job.run_at, job_key => job.job_key)
       from new_rows n
       cross join lateral (values
         ('fund_instant', null::timestamptz, 'fund_instant:' || n.id, n.data->>'funding_timing' = 'instant'),
         ('sandbox_chargeback', now() + interval '1 second', 'chargeback:' || n.id, n.data->>'sandbox_chargeback' is not null))
         as job(task, run_at, job_key, due)
      where n.data->>'funding_status' = 'pending' and job.due;`);

const TWO_JOBS_STATEMENTS = postInserted(`
    perform graphile_worker.add_job('fund_instant', json_build_object('transaction_id', n.id), job_key => 'fund_instant:' || n.id)
       from new_rows n
      where n.data->>'funding_status' = 'pending' and n.data->>'funding_timing' = 'instant';
    perform graphile_worker.add_job('sandbox_chargeback', json_build_object('transaction_id', n.id),
                                    run_at => now() + interval '1 second', job_key => 'chargeback:' || n.id)
       from new_rows n
      where n.data->>'funding_status' = 'pending' and n.data->>'sandbox_chargeback' is not null;`);

export async function up(knex: Knex): Promise<void> {
  await knex.raw(ONE_JOBS_STATEMENT);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(TWO_JOBS_STATEMENTS);
}
