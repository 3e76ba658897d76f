import type { Knex } from 'knex';

/**
 * The reporting change feed: one row per transaction saying which database transaction last
 * changed it (`txid`) and with which `version`. Triggers write it in the same database
 * transaction as the change, for every write path (API, worker transitions, direct SQL), also for
 * changes that emit no event (attrs or description edits).
 *
 * The mirror reads it by `txid` window behind a snapshot guard: everything written by
 * transactions older than `pg_snapshot_xmin(pg_current_snapshot())` is final, so the window
 * [previous xmin, current xmin) never misses a late commit. `version` comes from one sequence,
 * taken while the row lock is held, so it orders the versions of one transaction as they
 * committed; ClickHouse keeps the highest.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create sequence reporting_change_version;

    create table reporting_changes (
      transaction_id text primary key,
      org_id text not null,
      environment text not null,
      created_at timestamptz not null,
      deleted boolean not null default false,
      version bigint not null,
      txid xid8 not null,
      changed_at timestamptz not null
    );
    create index reporting_changes_txid on reporting_changes (txid);

    create function reporting_note_changes() returns trigger language plpgsql as $$
    declare
      noted bigint;
    begin
      if tg_op = 'DELETE' then
        insert into reporting_changes (transaction_id, org_id, environment, created_at, deleted, version, txid, changed_at)
        select id, org_id, environment, created_at, true, nextval('reporting_change_version'), pg_current_xact_id(), clock_timestamp()
          from old_rows
        on conflict (transaction_id) do update
          set deleted = true, version = excluded.version, txid = excluded.txid, changed_at = excluded.changed_at;
      else
        insert into reporting_changes (transaction_id, org_id, environment, created_at, deleted, version, txid, changed_at)
        select id, org_id, environment, created_at, false, nextval('reporting_change_version'), pg_current_xact_id(), clock_timestamp()
          from new_rows
        on conflict (transaction_id) do update
          set deleted = false, version = excluded.version, txid = excluded.txid, changed_at = excluded.changed_at;
      end if;
      get diagnostics noted = row_count;
      if noted > 0 then
        perform pg_notify('reporting_changes', '');
      end if;
      return null;
    end $$;

    create trigger reporting_changes_insert after insert on transactions
      referencing new table as new_rows for each statement execute function reporting_note_changes();
    create trigger reporting_changes_update after update on transactions
      referencing new table as new_rows for each statement execute function reporting_note_changes();
    create trigger reporting_changes_delete after delete on transactions
      referencing old table as old_rows for each statement execute function reporting_note_changes();

    insert into reporting_changes (transaction_id, org_id, environment, created_at, deleted, version, txid, changed_at)
    select id, org_id, environment, created_at, false, nextval('reporting_change_version'), pg_current_xact_id(), clock_timestamp()
      from transactions;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop trigger reporting_changes_insert on transactions;
    drop trigger reporting_changes_update on transactions;
    drop trigger reporting_changes_delete on transactions;
    drop function reporting_note_changes();
    drop table reporting_changes;
    drop sequence reporting_change_version;
  `);
}
