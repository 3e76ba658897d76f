import type { Knex } from 'knex';

/**
 * The door's statement that changes or deletes rows of a family table writes their audit events
 * itself (api/db/auditedChanges.ts), as a create's statement does (migration 20261128000100): it
 * sets `settle.audited_<table>` to its own `statement_timestamp()` before it touches the table, and
 * the table's update and delete triggers then do not fire for that top-level statement. Any other
 * statement, and any statement a trigger runs inside it, is audited by the trigger as ever.
 */

/** Every audited table, with the object type its triggers name: those with an update audit trigger. */
async function auditedTables(knex: Knex): Promise<Array<[table: string, objectType: string]>> {
  const found = await knex.raw(`
    select c.relname as table, substring(pg_get_triggerdef(t.oid) from 'audit_note_changes\\(''([a-z_]+)''\\)') as object_type
      from pg_trigger t join pg_class c on c.oid = t.tgrelid
     where t.tgname = c.relname || '_audit_update'
     order by c.relname`);
  return found.rows.map((row: { table: string; object_type: string }) => [row.table, row.object_type]);
}

function changeTriggers(table: string, objectType: string, skipOwnStatement: boolean): string {
  const when = skipOwnStatement
    ? `when (pg_trigger_depth() > 0 or current_setting('settle.audited_${table}', true) is distinct from statement_timestamp()::text)`
    : '';
  return `
    drop trigger ${table}_audit_update on ${table};
    create trigger ${table}_audit_update after update on ${table}
      referencing old table as old_rows new table as new_rows for each statement ${when} execute function audit_note_changes('${objectType}');
    drop trigger ${table}_audit_delete on ${table};
    create trigger ${table}_audit_delete after delete on ${table}
      referencing old table as old_rows for each statement ${when} execute function audit_note_changes('${objectType}');`;
}

export async function up(knex: Knex): Promise<void> {
  for (const [table, objectType] of await auditedTables(knex)) await knex.raw(changeTriggers(table, objectType, true));
}

export async function down(knex: Knex): Promise<void> {
  for (const [table, objectType] of await auditedTables(knex)) await knex.raw(changeTriggers(table, objectType, false));
}
