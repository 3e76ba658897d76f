import type { Knex } from 'knex';

/**
 * One AFTER INSERT trigger on transactions notes the inserted rows in the
 * reporting change feed (as `reporting_note_changes` notes an insert: a new change row, or one
 * still there for a reused id made new again) and posts the ledger legs and timed jobs of the rows
 * the funding trigger marked pending, in one call. A card payment's statement is one INSERT (alone
 * or for a group), and each statement trigger's call is paid per statement: entering a PL/pgSQL
 * trigger function with a transition table costs some 40-70 µs of Postgres CPU beside the
 * statements it runs (measured under load). `reporting_note_changes` still notes updates
 * and deletes.
 *
 * Benchmarks that generate rows with session_replication_role = replica enable this trigger
 * always, so the change feed is written as in production; generated rows carry no funding status,
 * so it posts nothing for them.
 */
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
     where leg.amount <> 0 and p.account_id is not null;

    -- Instant funding, and the sandbox card network's chargebacks about a second after processing.
    perform graphile_worker.add_job(job.task, json_build_object('transaction_id', n.id), run_at => job.run_at, job_key => job.job_key)
       from new_rows n
       cross join lateral (values
         ('fund_instant', null::timestamptz, 'fund_instant:' || n.id, n.data->>'funding_timing' = 'instant'),
         ('sandbox_chargeback', now() + interval '1 second', 'chargeback:' || n.id, n.data->>'sandbox_chargeback' is not null))
         as job(task, run_at, job_key, due)
      where n.data->>'funding_status' = 'pending' and job.due;`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
  create or replace function transaction_inserted() returns trigger language plpgsql as $$
  begin
    insert into reporting_changes (transaction_id, org_id, environment, created_at, deleted, version, txid, changed_at, inserted_txid)
    select id, org_id, environment, created_at, false, nextval('reporting_change_version'), pg_current_xact_id(), clock_timestamp(), pg_current_xact_id()
      from new_rows
    on conflict (transaction_id) do update
      set deleted = false, version = excluded.version, txid = excluded.txid, changed_at = excluded.changed_at, inserted_txid = null;
${LEDGER_LEGS}
    return null;
  end $$;

  drop trigger reporting_changes_insert on transactions;
  drop trigger transactions_post_insert on transactions;
  create trigger transactions_inserted after insert on transactions
    referencing new table as new_rows for each statement execute function transaction_inserted();
  drop function transaction_post_inserted();`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
  create or replace function transaction_post_inserted() returns trigger language plpgsql as $$
  begin${LEDGER_LEGS}
    return null;
  end $$;

  drop trigger transactions_inserted on transactions;
  drop function transaction_inserted();
  create trigger reporting_changes_insert after insert on transactions
    referencing new table as new_rows for each statement execute function reporting_note_changes();
  create trigger transactions_post_insert after insert on transactions
    referencing new table as new_rows for each statement execute function transaction_post_inserted();`);
}
