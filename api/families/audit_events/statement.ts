/**
 * Audit events written by the statement that creates the rows (a card payment's one statement,
 * api/families/transactions/repository.ts; one-row creates arriving together, createdRows.ts),
 * instead of by the audit trigger (migration 20261128000100). Such a statement marks each table
 * whose rows it audits with `ownAuditSql(table)` before inserting them, and that table's insert
 * trigger then does not fire for it (for it alone: any other statement is audited by the trigger
 * as ever).
 *
 * What is built here is what the database would build, from the fields sent: `changes` as the
 * trigger builds them from the stored row (`audit_changes(null, audit_fields(row))`: the type and
 * the data's keys, secrets' keys dropped at every depth, JSON nulls left out), and, for a writer
 * that has its request's actor at hand, the event's whole `data` as `audit_data` over
 * `audit_context_of` the actor's setting builds it, with an id that sorts by time
 * (`newId`, so the events' primary key grows at its right edge). The database takes
 * them as they are when the stored row holds exactly the fields sent; otherwise (a field the
 * database added or changed on the way in, a BEFORE trigger's; no actor here; a key left to its
 * case-insensitive matching) it builds the event itself, as the trigger does:
 * `audit_created_changes` keeps `changes` exact. test/audit-statement.test.ts compares both on
 * the same changes.
 *
 * SETTLE_AUDIT_BY=trigger leaves every row to the trigger (the benchmark compares the two); either
 * way each created row is audited once, in its own statement.
 */
import { newId } from '../../ids.ts';

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

/** A created row's audit event as its writer built it: the event's id and `data` (JSON text). */
export interface BuiltEvent {
  id: string;
  data: string;
}

const SYSTEM_ACTOR = '{"type":"system"}';

/** A JSON string of a setting's text field as `->>` reads it, or undefined when that is not a string or null. */
function textField(value: unknown): string | undefined {
  if (value === undefined || value === null) return 'null';
  return typeof value === 'string' ? JSON.stringify(value) : undefined;
}

/**
 * The audit event of a created row as `audit_data(audit_context_of(setting), 'create', …)` builds
 * it, or null when the database is to build it: no actor's setting here (the session's own
 * applies), or changes left to the database.
 */
export function createdEvent(setting: string | null, objectType: string, objectId: string, changes: BuiltChanges | null): BuiltEvent | null {
  if (!setting || !changes) return null;
  const context = JSON.parse(setting) as { actor?: unknown; request_id?: unknown; ip?: unknown } | null;
  if (!context || typeof context !== 'object') return null;
  const requestId = textField(context.request_id);
  const ip = textField(context.ip);
  if (requestId === undefined || ip === undefined) return null;
  const actor = context.actor === undefined ? SYSTEM_ACTOR : JSON.stringify(context.actor);
  return {
    id: newId('aud'),
    data: `{"actor":${actor},"action":"create","object_type":${JSON.stringify(objectType)},"object_id":${JSON.stringify(objectId)},`
      + `"changes":${changes.changes},"request_id":${requestId},"ip":${ip}}`,
  };
}

/**
 * The part of a statement that writes the audit events of the rows it created: `sources` is a
 * query of those rows as `object_type, tbl, id, org_id, environment, type, data, keys, actor,
 * stored, event_id` (the sent fields and their keys, the row's own actor setting, the stored row,
 * and the event's id, `newId('aud')`, or null for one of the database's), and either `built` (the
 * writer's changes, or null) or, with `built = 'events'`, `event` (the writer's event, or null). Each event has its own row's actor, so rows of many
 * requests may share the statement. Shared by every statement that audits its own rows.
 */
export function auditCreatedSql(sources: string, built: 'changes' | 'events' = 'changes'): string {
  const rows = built === 'events'
    ? `select s.*, s.event->'changes' as built from (${sources}) s`
    : `select s.*, null::jsonb as event from (${sources}) s`;
  const sent = `jsonb_build_object('type', a.type, 'data', a.data)`;
  return `insert into audit_events (id, org_id, environment, data)
       select coalesce(a.event_id, audit_id()), a.org_id, a.environment,
              case when a.event is not null and audit_row_fields(a.stored) = audit_row_fields(${sent}) then a.event
                   else audit_data(audit_context_of(coalesce(a.actor, current_setting('settle.audit', true), '')), 'create', a.object_type, a.id,
                          audit_created_changes(a.stored, ${sent}, a.keys::text[], a.built)) end
         from (${rows}) a
        where ${auditedTableSql('a.tbl')}
       returning 1`;
}
