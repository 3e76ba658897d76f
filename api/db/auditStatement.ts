/**
 * Audit events written by the statement that creates the rows (a card payment's one statement,
 * api/families/transactions/repository.ts; one-row creates arriving together, auditedRows.ts),
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
 * them as they are when the stored row holds exactly the type and data sent. When the database
 * added fields on the way in (a BEFORE trigger's), their changes join the writer's; when it changed
 * or dropped a field sent, `audit_created_changes` gives the event's `changes`, exact (see
 * `auditCreatedSql`); with no actor here, or a key left to its case-insensitive matching, the
 * database builds the whole event, as the trigger does. test/audit-statement.test.ts compares
 * both on the same changes.
 *
 * SETTLE_AUDIT_BY=trigger leaves every row to the trigger (the benchmark compares the two); either
 * way each created row is audited once, in its own statement.
 */
import type { StoredObject } from './storedRow.ts';
import { newId } from '../ids.ts';

/** The keys the trigger's `audit_scrub` drops, matched case-insensitively as PostgreSQL's `~*`. */
export const SECRET_KEY = /(sealed|secret|hash|password|card_code|fingerprint)/i;
/** A key with letters outside ASCII is left to the database: its case-insensitive matching is its own. */
const NOT_ASCII = /[^\x00-\x7f]/;

/**
 * Whether a statement that can audit its rows does: SETTLE_AUDIT_BY (api/config.ts), applied at
 * start-up (`applyWriteSettings`); read per statement, so a test can compare both in one process.
 */
export const auditRows = { inStatement: true };

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
  return plainChanges(fields) ?? fieldByField(fields);
}

/**
 * The changes of fields none of whose keys or values names a secret, has letters outside ASCII or
 * anything JSON escapes with a backslash (most rows): each field's value wrapped as it is and the
 * whole written by one `JSON.stringify` (a field a time cost about 1 µs a field). Null otherwise.
 */
function plainChanges(fields: Record<string, unknown>): BuiltChanges | null {
  const changes: Record<string, unknown> = {};
  let keys = '';
  for (const key of Object.keys(fields)) {
    const value = fields[key];
    // What JSON leaves out (undefined, functions) is no field; what it writes as null is a field
    // with no change; a value with a toJSON of its own (a date), the key that is an object's
    // prototype here, or a key the keys' literal must escape (a field with no change is not in
    // the text tested below) is the field-by-field writer's.
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol') continue;
    if (key === '__proto__' || /[\\"]/.test(key) || (typeof value === 'object' && value !== null && typeof (value as { toJSON?: unknown }).toJSON === 'function')) return null;
    keys += `${keys ? ',' : ''}"${key}"`;
    if (value !== null && !(typeof value === 'number' && !Number.isFinite(value))) changes[key] = [null, value];
  }
  const text = JSON.stringify(changes);
  return SECRET_KEY.test(text) || NOT_ASCII.test(text) || text.includes('\\') ? null : { changes: text, keys: `{${keys}}` };
}

function fieldByField(fields: Record<string, unknown>): BuiltChanges | null {
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
 * A condition that `table` (an SQL text expression naming it) is audited for `change`: its audit
 * trigger on inserts (updates, deletes) is enabled. Disabling the trigger turns off the audit of
 * those changes to the table's rows whichever writes them, the trigger or the statement.
 */
export function auditedTableSql(table: string, change: 'insert' | 'update' | 'delete' = 'insert'): string {
  return `exists (select from pg_trigger where tgrelid = ${table}::regclass and tgname = ${table} || '_audit_${change}' and tgenabled <> 'D')`;
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

/** A writer's created rows' audit, as the statement's parameters (one entry a row): see `auditCreatedSql`. */
export interface CreatedAudit {
  eventIds: Array<string | null>;
  events: Array<string | null>;
  /** the changes, for a row without an event */
  built: Array<string | null>;
  keys: Array<string | null>;
}

/** What a writer sends for the rows it creates of `objectType`, each with its request's actor setting; all null when `on` is false. */
export function createdAudit(objectType: string, rows: Array<{ row: StoredObject; audit: string | null }>, on = true): CreatedAudit {
  const audit: CreatedAudit = { eventIds: [], events: [], built: [], keys: [] };
  for (const { row, audit: setting } of rows) {
    const changes = on ? createdChanges(row.type, row.data) : null;
    const event = createdEvent(setting, objectType, row.id, changes);
    audit.eventIds.push(event?.id ?? (on ? newId('aud') : null));
    audit.events.push(event?.data ?? null);
    audit.built.push(event ? null : changes?.changes ?? null);
    audit.keys.push(changes?.keys ?? null);
  }
  return audit;
}

/**
 * The part of a statement that writes the audit events of the rows it created: `sources` is a
 * query of those rows as `object_type, tbl, id, org_id, environment, type, data, keys, actor,
 * stored_type, stored_data, event_id, event, built`: the sent fields and their keys, the row's
 * own actor setting, the stored row's type and data, and what the writer built: the event's id
 * (`newId('aud')`, or null for one of the database's), its whole event (`createdEvent`, or null),
 * or, without an event, its changes (`createdChanges`, or null). Each event has its own row's
 * actor, so rows of many requests may share the statement. Shared by every statement that audits
 * its own rows.
 *
 * The rows are of family tables, whose columns besides the type and the data are the bookkeeping
 * ones `audit_row_fields` leaves out (id, tenant, times; test/audit-statement.test.ts checks every
 * audited family table): a row's fields are its type and its data. So the writer's event is taken
 * as it is when the stored type and data are those sent, two comparisons of what the insert
 * returned (building both rows' fields as jsonb to compare them cost Postgres some 9 µs an
 * event, bench/audit.ts's create customer). When the database only added fields on the way in (a
 * payment's fee and funding date), the event keeps the writer's actor, request and address and
 * its changes, with the added fields' own: the stored data is the data sent and those fields, and
 * none of them names a secret anywhere in it (else the trigger's `audit_scrub` decides). That
 * costs some 23 µs a transaction in Postgres, against 42 µs for `audit_created_changes`, which
 * gives the changes in every other case (a field sent that the database changed or dropped);
 * without an event the database builds it all.
 */
export function auditCreatedSql(sources: string): string {
  const sent = `jsonb_build_object('type', a.type, 'data', a.data)`;
  const changes = `audit_created_changes(jsonb_build_object('type', a.stored_type, 'data', a.stored_data), ${sent}, a.keys::text[], coalesce(a.event->'changes', a.built))`;
  // For a row with the writer's event: whether it was stored as sent, and if not, the stored
  // data's keys that were not sent, with their values (the database changed it on the way in).
  // Each is computed once a row: the fences keep the comparison from being inlined into `fields`
  // and both into every branch that reads them.
  const added = `select s.same, case when a.event is not null and not s.same then a.stored_data - a.keys::text[] end as fields
                   from (select a.event is not null and a.stored_type = a.type and a.stored_data = a.data as same offset 0) s offset 0`;
  return `insert into audit_events (id, org_id, environment, data)
       select coalesce(a.event_id, audit_id()), a.org_id, a.environment,
              case when a.event is null
                     then audit_data(audit_context_of(coalesce(a.actor, current_setting('settle.audit', true), '')), 'create', a.object_type, a.id, ${changes})
                   when added.same then a.event
                   when a.stored_type = a.type and a.data || added.fields = a.stored_data and added.fields::text !~* '${SECRET_KEY.source}'
                     then jsonb_set(a.event, '{changes}', (a.event->'changes')
                            || coalesce((select jsonb_object_agg(key, jsonb_build_array(null, value)) from jsonb_each(added.fields) where value <> 'null'), '{}'))
                   else jsonb_set(a.event, '{changes}', ${changes}) end
         from (${sources}) a cross join lateral (${added}) added
        where ${auditedTableSql('a.tbl')}
       returning 1`;
}
