import type { Knex } from 'knex';

/**
 * The change feed says which database transaction inserted each row it names (`inserted_txid`),
 * while its change row lasts: the mirror adds a transaction inserted after the rollup's position to
 * the rollup's day groups (reporting/columns.ts) instead of aggregating the whole day again, since
 * the rollup cannot have counted it. An update keeps the value (an insert and its updates are one
 * new row to the rollup). An insert over a change row that is still there (the id of a deleted
 * transaction used again) and an update whose change row was pruned leave it null: the transaction
 * may have been counted before, so its day is aggregated again, which is always exact.
 */
const NOTE_CHANGES = (inserted: boolean) => `
  create or replace function reporting_note_changes() returns trigger language plpgsql as $$
  begin
    if tg_op = 'DELETE' then
      insert into reporting_changes (transaction_id, org_id, environment, created_at, deleted, version, txid, changed_at)
      select id, org_id, environment, created_at, true, nextval('reporting_change_version'), pg_current_xact_id(), clock_timestamp()
        from old_rows
      on conflict (transaction_id) do update
        set deleted = true, version = excluded.version, txid = excluded.txid, changed_at = excluded.changed_at;
    else
      insert into reporting_changes (transaction_id, org_id, environment, created_at, deleted, version, txid, changed_at${inserted ? ', inserted_txid' : ''})
      select id, org_id, environment, created_at, false, nextval('reporting_change_version'), pg_current_xact_id(), clock_timestamp()${inserted ? `,
             case when tg_op = 'INSERT' then pg_current_xact_id() end` : ''}
        from new_rows
      on conflict (transaction_id) do update
        set deleted = false, version = excluded.version, txid = excluded.txid, changed_at = excluded.changed_at${inserted ? `,
            inserted_txid = case when tg_op = 'INSERT' then null else reporting_changes.inserted_txid end` : ''};
    end if;
    return null;
  end $$;`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table reporting_changes add column inserted_txid xid8');
  await knex.raw(NOTE_CHANGES(true));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(NOTE_CHANGES(false));
  await knex.raw('alter table reporting_changes drop column inserted_txid');
}
