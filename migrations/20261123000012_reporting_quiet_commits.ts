import type { Knex } from 'knex';

/**
 * Commits that change transactions no longer NOTIFY. PostgreSQL serialises every committing
 * transaction that has sent a NOTIFY on one global lock, so a NOTIFY per payment capped the
 * commit rate (the events outbox dropped its per-event NOTIFY for the same reason). The mirror
 * now polls the change feed while it is idle (REPORTING_POLL_INTERVAL, a cheap indexed read) and
 * runs back-to-back passes while changes keep coming; a query waiting for its own writes still
 * wakes the leader at once (`reporting_wake`). The change rows themselves are unchanged.
 */
const NOTE_CHANGES = (notify: boolean) => `
  create or replace function reporting_note_changes() returns trigger language plpgsql as $$
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
    ${notify ? `get diagnostics noted = row_count;
    if noted > 0 then
      perform pg_notify('reporting_changes', '');
    end if;` : ''}
    return null;
  end $$;`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(NOTE_CHANGES(false));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(NOTE_CHANGES(true));
}
