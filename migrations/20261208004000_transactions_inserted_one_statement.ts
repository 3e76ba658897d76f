import type { Knex } from 'knex';

/**
 * The AFTER INSERT trigger on transactions does its three writes in one statement: the reporting
 * change rows, the ledger legs of the rows the funding fields marked pending, and their timed jobs
 * (instant funding; the sandbox card network's chargeback about a second after processing) are
 * the parts of one WITH query over the transition table. Each statement a PL/pgSQL function runs
 * is started, run and ended by the executor on its own, a cost paid per inserting statement
 * whatever its rows: a card payment's statement (one payment or a group) pays it once, not once
 * per write. The parts read only the inserted rows, not each other's writes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
  create or replace function transaction_inserted() returns trigger language plpgsql as $$
  declare
    jobs int;
  begin
    with changes as (
      insert into reporting_changes (transaction_id, org_id, environment, created_at, deleted, version, txid, changed_at, inserted_txid)
      select id, org_id, environment, created_at, false, nextval('reporting_change_version'), pg_current_xact_id(), clock_timestamp(), pg_current_xact_id()
        from new_rows
      on conflict (transaction_id) do update
        set deleted = false, version = excluded.version, txid = excluded.txid, changed_at = excluded.changed_at, inserted_txid = null),
    postings as (
      select 'process:' || n.id as posting, n.id as transaction_id, n.org_id, n.environment,
             n.data->>'processing_id' as account_id,
             ledger_gross(n.type, (n.data->>'amount')::bigint) as gross, (n.data->>'fee')::bigint as fee, 'pending' as bucket,
             n.data->>'funding_timing' = 'instant' as instant, n.data->>'sandbox_chargeback' is not null as chargeback
        from new_rows n
       where n.data->>'funding_status' = 'pending'),
    legs as (
      insert into ledger_entries (org_id, environment, account_id, transaction_id, posting, bucket, amount)
      select p.org_id, p.environment, p.account_id, p.transaction_id, p.posting, leg.bucket, leg.amount
        from postings p
        cross join lateral (values ('world', -p.gross), ('fees', p.fee), (p.bucket, p.gross - p.fee)) as leg(bucket, amount)
       where leg.amount <> 0 and p.account_id is not null)
    -- Instant funding, and the sandbox card network's chargebacks about a second after processing.
    select count(graphile_worker.add_job(job.task, json_build_object('transaction_id', p.transaction_id), run_at => job.run_at, job_key => job.job_key))
      into jobs
      from postings p
      cross join lateral (values
        ('fund_instant', null::timestamptz, 'fund_instant:' || p.transaction_id, p.instant),
        ('sandbox_chargeback', now() + interval '1 second', 'chargeback:' || p.transaction_id, p.chargeback))
        as job(task, run_at, job_key, due)
     where job.due;
    return null;
  end $$;`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
  create or replace function transaction_inserted() returns trigger language plpgsql as $$
  begin
    insert into reporting_changes (transaction_id, org_id, environment, created_at, deleted, version, txid, changed_at, inserted_txid)
    select id, org_id, environment, created_at, false, nextval('reporting_change_version'), pg_current_xact_id(), clock_timestamp(), pg_current_xact_id()
      from new_rows
    on conflict (transaction_id) do update
      set deleted = false, version = excluded.version, txid = excluded.txid, changed_at = excluded.changed_at, inserted_txid = null;

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
     where leg.amount <> 0 and p.account_id is not null;

    -- Instant funding, and the sandbox card network's chargebacks about a second after processing.
    perform graphile_worker.add_job(job.task, json_build_object('transaction_id', n.id), run_at => job.run_at, job_key => job.job_key)
       from new_rows n
       cross join lateral (values
         ('fund_instant', null::timestamptz, 'fund_instant:' || n.id, n.data->>'funding_timing' = 'instant'),
         ('sandbox_chargeback', now() + interval '1 second', 'chargeback:' || n.id, n.data->>'sandbox_chargeback' is not null))
         as job(task, run_at, job_key, due)
      where n.data->>'funding_status' = 'pending' and job.due;
    return null;
  end $$;`);
}
