import type { Knex } from 'knex';

/**
 * The door's statement that changes or deletes rows of a family table writes their audit events
 * itself (api/db/auditedChanges.ts), as a create's statement does (migration 20261128000100): it
 * sets `settle.audited_<table>` to its own `statement_timestamp()` before it touches the table, and
 * the table's update and delete triggers then do not fire for that top-level statement. Any other
 * statement, and any statement a trigger runs inside it, is audited by the trigger as ever.
 *
 * `data_with_changes(data, changes)` applies a change as the door sends it, a JSON array of
 * `[path, value]` (set the value at the path, making the objects on the way) and `[path]` (remove
 * what is at the path), to the data as stored when the statement locks the row: a change planned
 * from a row read earlier applies over whatever other changes landed since, field by field.
 */
const FUNCTIONS_UP = `
  create function data_with_value(target jsonb, path text[], value jsonb) returns jsonb language plpgsql immutable as $$
  declare
    base jsonb := case when jsonb_typeof(target) = 'object' then target else '{}'::jsonb end;
  begin
    if cardinality(path) = 1 then return base || jsonb_build_object(path[1], value); end if;
    return base || jsonb_build_object(path[1], data_with_value(base->path[1], path[2:], value));
  end $$;

  create function data_with_changes(data jsonb, changes jsonb) returns jsonb language plpgsql immutable as $$
  declare
    change jsonb;
    path text[];
  begin
    for change in select value from jsonb_array_elements(changes) loop
      path := array(select jsonb_array_elements_text(change->0));
      if jsonb_array_length(change) = 1 then data := data #- path;
      else data := data_with_value(data, path, change->1);
      end if;
    end loop;
    return data;
  end $$;
`;


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
  await knex.raw(FUNCTIONS_UP);
  for (const [table, objectType] of await auditedTables(knex)) await knex.raw(changeTriggers(table, objectType, true));
}

export async function down(knex: Knex): Promise<void> {
  for (const [table, objectType] of await auditedTables(knex)) await knex.raw(changeTriggers(table, objectType, false));
  await knex.raw('drop function data_with_changes(jsonb, jsonb); drop function data_with_value(jsonb, text[], jsonb)');
}
