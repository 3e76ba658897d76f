/**
 * Audit events written by the statement that creates the rows (a card payment's one statement,
 * api/families/transactions/repository.ts), instead of by the audit trigger (migration
 * 20261128000100). Such a statement marks each table whose rows it audits with
 * `ownAuditSql(table)` before inserting them, and that table's insert trigger then does not fire
 * for it (for it alone: any other statement is audited by the trigger as ever).
 *
 * The database's part is shared with the trigger: the envelope is `audit_data` over
 * `audit_context_of` the setting the trigger reads, the id is `audit_id()`, and
 * `audit_created_changes` keeps `changes` exact (a field the database added on the way in, a
 * BEFORE trigger's, is computed as the trigger does; a row the database changed otherwise is
 * computed whole as the trigger does). What is built here is `changes` from the fields sent, as
 * the trigger builds it from the stored row (`audit_changes(null, audit_fields(row))`): the type
 * and the data's keys, secrets' keys dropped at every depth, JSON nulls left out.
 * test/audit-statement.test.ts compares both on the same changes.
 *
 * SETTLE_AUDIT_BY=trigger leaves every row to the trigger (the benchmark compares the two); either
 * way each created row is audited once, in its own statement.
 */

/** The keys the trigger's `audit_scrub` drops, matched case-insensitively as PostgreSQL's `~*`. */
const SECRET_KEY = /(sealed|secret|hash|password|card_code|fingerprint)/i;
/** A key with letters outside ASCII is left to the database: its case-insensitive matching is its own. */
const NOT_ASCII = /[^\x00-\x7f]/;

/** Whether a statement that can audit its rows does (read per statement, so a benchmark can compare both in one process). */
export const auditRows = { inStatement: process.env.SETTLE_AUDIT_BY !== 'trigger' };

class LeftToDatabase extends Error {}

function scrubbed(key: string, value: unknown): unknown {
  if (NOT_ASCII.test(key)) throw new LeftToDatabase();
  return SECRET_KEY.test(key) ? undefined : value;
}

/** A created row's `changes` as JSON text (`{"field": [null, value]}`), and the keys of the fields they were built from (a PostgreSQL text[] literal). */
export interface BuiltChanges {
  changes: string;
  keys: string;
}

/** The `changes` of a created row of `type` and `data`, or null when the database is to compute them. */
export function createdChanges(type: string, data: Record<string, unknown>): BuiltChanges | null {
  const fields: Record<string, unknown> = { type, ...data };
  let changes = '';
  let keys = '';
  try {
    for (const key of Object.keys(fields)) {
      let json = JSON.stringify(fields[key]);
      if (json === undefined) continue;
      keys += `${keys ? ',' : ''}"${key.replace(/[\\"]/g, '\\$&')}"`;
      if (scrubbed(key, true) === undefined || json === 'null') continue;
      // Only a value that names a secret (or has letters outside ASCII) needs its keys looked at.
      if (SECRET_KEY.test(json) || NOT_ASCII.test(json)) json = JSON.stringify(fields[key], scrubbed);
      changes += `${changes ? ',' : ''}${JSON.stringify(key)}:[null,${json}]`;
    }
  } catch (error) {
    if (error instanceof LeftToDatabase) return null;
    throw error;
  }
  return { changes: `{${changes}}`, keys: `{${keys}}` };
}

/**
 * A condition that `table` (an SQL text expression naming it) is audited: its audit trigger on
 * inserts is enabled. Disabling the trigger turns off the audit of created rows of the table
 * whichever writes them, the trigger or the statement.
 */
export function auditedTableSql(table: string): string {
  return `exists (select from pg_trigger where tgrelid = ${table}::regclass and tgname = ${table} || '_audit_insert' and tgenabled <> 'D')`;
}

/**
 * A select-list item that marks `table`'s rows inserted by this statement as audited by it: to be
 * evaluated before they are inserted (in the part the insert reads its rows from).
 */
export function ownAuditSql(table: string): string {
  return `set_config('settle.audited_${table}', statement_timestamp()::text, true)`;
}

/**
 * The part of a statement that writes the audit events of the rows it created: `sources` is a
 * query of those rows as `object_type, tbl, id, org_id, environment, type, data, built, keys,
 * actor, stored` (the sent fields, the writer's built changes and their keys, the row's own actor
 * setting, and the stored row). Each event has its own row's actor, so rows of many requests may
 * share the statement. Shared by every statement that audits its own rows.
 */
export function auditCreatedSql(sources: string): string {
  return `insert into audit_events (id, org_id, environment, data)
       select audit_id(), a.org_id, a.environment, audit_data(c, 'create', a.object_type, a.id,
                audit_created_changes(a.stored, jsonb_build_object('type', a.type, 'data', a.data), a.keys::text[], a.built))
         from (${sources}) a,
              lateral audit_context_of(coalesce(a.actor, current_setting('settle.audit', true), '')) c
        where ${auditedTableSql('a.tbl')}
       returning 1`;
}
