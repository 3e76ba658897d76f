/**
 * Changes and deletes of rows of one family table, each written with its audit event by one
 * statement (the update and delete door in api/engine/operations.ts), alone or for several requests
 * at once (group commit). Each event has its own request's actor; the table's update and delete
 * triggers leave the statement's rows to it (migration 20261204000100), as they leave a create
 * statement's (auditedRows.ts).
 *
 * A change is sent as what it changes, field by field (`changesBetween`: the values set and the
 * fields removed, at their paths in the data), not as a whole row: the statement locks each row,
 * reads it as it is then and applies the change to it (`data_with_changes`), so a change planned
 * from a row read earlier, without its lock, applies over any change that landed meanwhile and
 * loses none. Rows are locked in id order, so statements that run at once never deadlock.
 *
 * The event is the trigger's to the byte: the statement computes it in the database from the row
 * as locked and the row as stored (after any BEFORE trigger): its changes read off the fields the
 * change named when they are exactly the trigger's (`namedFieldChangesSql`), else with the
 * trigger's own functions (`audit_changes` over `audit_fields`, a changed secret named with its
 * values redacted by `audit_secret_changes`); the step is named by `audit_action`; and it writes
 * none for a change that changed no field (test/repository/audited-changes.test.ts compares both
 * writers on each kind of change). With SETTLE_AUDIT_BY=trigger (`auditRows.inStatement` false) the statement
 * writes no event and the triggers audit it, with the first change's actor.
 *
 * A change planned from a row read without its lock may carry the outbox events it causes
 * (`events`), drafted from that row, and then the data it was read with (`expected`): the statement
 * writes the change and its events only if it finds the row's data still so under its lock, and
 * otherwise skips it (answering null) for the caller to run it again in a transaction. The events
 * are written by the same statement (api/db/events.ts), so they commit with the change or not at all.
 */
import { AUDIT_SETTING_SQL } from './auditContext.ts';
import { auditedTableSql, auditRows, ownAuditSql, SECRET_KEY } from './auditStatement.ts';
import { rows, type Db } from './connection.ts';
import { tenantsEventsInsert, type EventDraft } from './events.ts';
import { STORED_ROW, type StoredObject } from './storedRow.ts';
import type { Tenant } from './tenant.ts';
import { newId } from '../ids.ts';

/** What a change sets (`[path, value]`) and removes (`[path]`) in a row's data. */
export type PathChange = [path: string[], value?: unknown];

/**
 * What a change or delete of a row planned without its lock writes besides the row: the events it
 * causes, written only if the statement finds the row's data as `expected` (the data it was planned from).
 */
export interface PlannedFromRead {
  events: EventDraft[];
  expected: Record<string, unknown>;
}

/** A change to write: the row's id and what the change does to it, and its request's actor setting. */
export interface ChangedItem {
  tenant: Tenant;
  id: string;
  changes: PathChange[];
  audit: string | null;
  read?: PlannedFromRead;
}

/** A row to delete, with its request's actor setting. */
export interface DeletedItem {
  tenant: Tenant;
  id: string;
  audit: string | null;
  read?: PlannedFromRead;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * What turns `before` into `after`, field by field: nested objects are compared key by key (an
 * object where `before` has none, set field by field), any other value is set whole when its JSON
 * differs; a key with no value (absent or undefined) in
 * `after` is removed.
 */
export function changesBetween(before: Record<string, unknown>, after: Record<string, unknown>, path: string[] = [], out: PathChange[] = []): PathChange[] {
  for (const key of Object.keys(before)) {
    if (before[key] !== undefined && after[key] === undefined) out.push([[...path, key]]);
  }
  for (const [key, value] of Object.entries(after)) {
    if (value === undefined) continue;
    const prior = before[key];
    // An object sent where the row had none sets its fields one by one too, so that another change
    // making the same object at once keeps its own fields in it.
    const absent = prior === undefined || prior === null;
    if (isObject(value) && (isObject(prior) || (absent && Object.keys(value).length > 0))) {
      changesBetween(isObject(prior) ? prior : {}, value, [...path, key], out);
    } else if (JSON.stringify(prior) !== JSON.stringify(value)) out.push([[...path, key], value]);
  }
  return out;
}

/**
 * The changes of a changed row as the trigger's update branch computes them (`audit_changes`
 * over both rows' `audit_fields`, and `audit_secret_changes`): over every field of both rows,
 * scrubbing each, some 50 µs of Postgres CPU a customer.
 */
function everyFieldChangesSql(): string {
  const before = `jsonb_build_object('type', c.prior_type, 'data', c.prior_data)`;
  const after = `jsonb_build_object('type', c.type, 'data', c.data)`;
  return `audit_changes(audit_fields(${before}), audit_fields(${after}))
          || audit_secret_changes(audit_row_fields(${before}), audit_row_fields(${after}), '')`;
}

/**
 * The same changes read off the fields the change named (`c.named`, the first key of each of its
 * paths, as the writer sent them), with whether they are exact: they are when nothing else of the
 * row changed (its type, and its data but those fields; a BEFORE trigger may have set others) and
 * neither the names nor the values of the fields that changed name a secret (the pattern of
 * `audit_scrub`), so scrubbing them keeps them whole and no secret changed. A row's fields are its
 * type and its data's keys (`audit_row_fields`), so a change that names `type` is left to
 * `everyFieldChangesSql` too. The names are cast once a row (the fence keeps the cast from being
 * copied into each use).
 */
function namedFieldChangesSql(): string {
  return `select c.type = c.prior_type and not 'type' = any(k.keys) and c.data - k.keys = c.prior_data - k.keys
                 and x.changes::text !~* '${SECRET_KEY.source}' as exact, x.changes
            from (select c.named::text[] as keys offset 0) k
            cross join lateral (
              select coalesce(jsonb_object_agg(key, jsonb_build_array(c.prior_data->key, c.data->key)), '{}') as changes
                from unnest(k.keys) key
               where coalesce(c.prior_data->key, 'null') is distinct from coalesce(c.data->key, 'null')) x`;
}

/**
 * An event's `data` as the trigger's `audit_data(audit_context_of(setting), …)` builds it, from
 * `ctx.c`, the actor setting parsed (`eventContextSql`): written out here rather than called, as
 * two PL/pgSQL calls and the row type between them cost more than the event's other parts.
 */
function eventDataSql(action: string, objectType: string, objectId: string, changes: string): string {
  return `jsonb_build_object('actor', coalesce(ctx.c->'actor', '{"type": "system"}'), 'action', ${action}, 'object_type', '${objectType}',
            'object_id', ${objectId}, 'changes', ${changes}, 'request_id', ctx.c->>'request_id', 'ip', ctx.c->>'ip')`;
}

/** `ctx.c` for `eventDataSql`: the item's actor setting, else the session's, parsed as `audit_context_of` parses it (once a row). */
function eventContextSql(setting: string): string {
  return `cross join lateral (select coalesce(nullif(coalesce(${setting}, current_setting('settle.audit', true), ''), ''), '{}')::jsonb as c offset 0) ctx`;
}

/**
 * The event of each changed row whose fields changed: the trigger's update branch over `changed`.
 * Each row's changes are computed once (the fence keeps them from being computed again for the
 * filter on them).
 */
function auditChangedSql(table: string, objectType: string): string {
  const action = `audit_action('${objectType}', d.type, d.prior_status, d.status)`;
  return `insert into audit_events (id, org_id, environment, data)
       select coalesce(d.event_id, audit_id()), d.org_id, d.environment, ${eventDataSql(action, objectType, 'd.id', 'd.changes')}
         from (select c.id, c.org_id, c.environment, c.type, c.event_id, c.actor, c.prior_data->>'status' as prior_status, c.data->>'status' as status,
                      case when named.exact then named.changes else ${everyFieldChangesSql()} end as changes
                 from changed c cross join lateral (${namedFieldChangesSql()}) named offset 0) d
         ${eventContextSql('d.actor')}
        where d.changes <> '{}' and ${auditedTableSql(`'${table}'`, 'update')}
       returning 1`;
}

/** The event of each deleted row: the trigger's delete branch over `deleted`. */
function auditDeletedSql(table: string, objectType: string): string {
  const changes = `audit_changes(audit_fields(jsonb_build_object('type', d.type, 'data', d.data)), null)`;
  return `insert into audit_events (id, org_id, environment, data)
       select coalesce(d.event_id, audit_id()), d.org_id, d.environment, ${eventDataSql(`'delete'`, objectType, 'd.id', changes)}
         from deleted d ${eventContextSql('d.actor')}
        where coalesce(current_setting('settle.test_data_reset', true), '') = '' and ${auditedTableSql(`'${table}'`, 'delete')}
       returning 1`;
}

const JSONB_COLUMNS = new Set(['changes', 'expected']);

/** The fields a change names (the first key of each of its paths), once each, as a PostgreSQL text[] literal. */
function namedFields(changes: PathChange[]): string {
  const keys = new Set(changes.map(([path]) => path[0]));
  return `{${[...keys].map((key) => `"${key.replace(/[\\"]/g, '\\$&')}"`).join(',')}}`;
}

/** Whether a row's `data` is as its item (`items`, `u` by default) was planned from (always, for an item planned under its lock). */
function asReadSql(data: string, items = 'u'): string {
  return `(${items}.expected is null or ${data} = ${items}.expected)`;
}

/** The events of the items the statement wrote (those named in `written`), in the item order `sorted`. */
function writtenEvents(sorted: Array<{ tenant: Tenant; read?: PlannedFromRead }>, written: string): { sql: string; bindings: unknown[] } | null {
  if (!sorted.some((item) => item.read?.events.length)) return null;
  return tenantsEventsInsert(sorted.map((item) => ({ tenant: item.tenant, drafts: item.read?.events ?? [] })), { writtenIn: written });
}

/** The data each item was planned from, or null for one planned under its lock. */
function expectedData(sorted: Array<{ read?: PlannedFromRead }>): Array<string | null> {
  return sorted.map((item) => (item.read ? JSON.stringify(item.read.expected) : null));
}

/**
 * The rows the statement's `u` part names, with the statement's marks: the actor of the triggers
 * it fires (the first item's) and, when it audits, its own audit of `table`.
 *
 * Limited to the items' count (bound last): a plan made for the arrays' values (a custom plan)
 * counts their items, one made without them (the generic plan) guesses 10 and, with a limit it
 * does not know, a tenth of that. Both then expect about one row per item for a change or two, and
 * Postgres, weighing them after five runs of the prepared statement, keeps the generic plan rather
 * than planning the statement anew at each run: planning took some 40 % of its CPU for a one-row
 * change (test/repository/audited-change-plans.test.ts checks the plan reads rows by primary key).
 */
function itemsSql(table: string, audited: boolean, columns: string[]): string {
  const marks = [`${AUDIT_SETTING_SQL} as acting`, ...(audited ? [`${ownAuditSql(table)} as own_audit`] : [])];
  const types = columns.map((column) => (JSONB_COLUMNS.has(column) ? '?::jsonb[]' : '?::text[]'));
  return `select *, ${marks.join(', ')}
       from unnest(${types.join(', ')}) with ordinality as u(${columns.join(', ')}, n)
      limit ?`;
}

/**
 * The items in id order: statements of a group writer that run at once lock their rows in one
 * order, so two groups naming the same rows wait for each other and never deadlock.
 */
function inIdOrder<T>(items: T[], idOf: (item: T) => string): T[] {
  return [...items].sort((a, b) => (idOf(a) < idOf(b) ? -1 : idOf(a) > idOf(b) ? 1 : 0));
}

/** The stored rows answered for `sorted` (by their position there, `n`) in the order of `items`. */
function answerInOrder<T>(items: T[], sorted: T[], found: Array<StoredObject & { n: string }>): Array<StoredObject | null> {
  const byItem = new Map(found.map(({ n, ...row }) => [sorted[Number(n) - 1], row as StoredObject]));
  return items.map((item) => byItem.get(item) ?? null);
}

/** The items in rounds that each name a row once: a statement changes a row at most once. */
function roundsOf(items: ChangedItem[]): ChangedItem[][] {
  const rounds: Array<{ ids: Set<string>; items: ChangedItem[] }> = [];
  for (const item of items) {
    let round = rounds.find((r) => !r.ids.has(item.id));
    if (!round) rounds.push(round = { ids: new Set(), items: [] });
    round.ids.add(item.id);
    round.items.push(item);
  }
  return rounds.map((r) => r.items);
}

/**
 * Applies each change to its row as the statement finds it, with its audit event (and the events
 * of an item planned from a read); answers the stored rows in order, null for a row that is not
 * there (or not the tenant's, or no longer as read). Changes of one
 * row go one statement after another, in the order given. `table` and `objectType` are a
 * family's own names (never input).
 */
export async function updateAuditedRows(db: Db, table: string, objectType: string, items: ChangedItem[]): Promise<Array<StoredObject | null>> {
  const stored = new Map<ChangedItem, StoredObject | null>();
  for (const round of roundsOf(items)) {
    const written = await updateOnce(db, table, objectType, round);
    round.forEach((item, i) => stored.set(item, written[i]));
  }
  return items.map((item) => stored.get(item)!);
}

/**
 * The locked rows (`prior`) carry their items along, so the update meets each row once, by its
 * primary key. The generic plan guesses 10 items: a join of the items with `prior` there is a
 * nested loop over both, n² row pairs for a change of n rows.
 */
async function updateOnce(db: Db, table: string, objectType: string, items: ChangedItem[]): Promise<Array<StoredObject | null>> {
  const audited = auditRows.inStatement;
  const sorted = inIdOrder(items, (item) => item.id);
  const events = writtenEvents(sorted, 'changed');
  const found = await rows<StoredObject & { n: string }>(db,
    `with u as (${itemsSql(table, audited, ['id', 'org_id', 'environment', 'changes', 'named', 'expected', 'event_id', 'actor'])}),
     prior as (
       select t.id, t.type, t.data, u.changes, u.named, u.expected, u.event_id, u.actor, u.n
         from ${table} t join u on t.id = u.id and t.org_id = u.org_id and t.environment = u.environment
        order by t.id for update of t),
     changed as (
       update ${table} t set data = data_with_changes(prior.data, prior.changes), modified_at = now()
         from prior
        where t.id = prior.id and ${asReadSql('prior.data', 'prior')}
        returning ${STORED_ROW.split(', ').map((column) => `t.${column}`).join(', ')}, t.org_id, t.environment,
                  prior.type as prior_type, prior.data as prior_data, prior.named, prior.event_id, prior.actor, prior.n)${audited ? `,
     audit as (${auditChangedSql(table, objectType)})` : ''}${events ? `,
     event as (${events.sql})` : ''}
     select ${STORED_ROW}, n from changed`,
    [
      items[0].audit,
      sorted.map((item) => item.id), sorted.map((item) => item.tenant.orgId), sorted.map((item) => item.tenant.environment),
      sorted.map((item) => JSON.stringify(item.changes)), sorted.map((item) => (audited ? namedFields(item.changes) : null)), expectedData(sorted),
      sorted.map(() => (audited ? newId('aud') : null)), sorted.map((item) => item.audit), sorted.length,
      ...(events?.bindings ?? []),
    ]);
  return answerInOrder(items, sorted, found);
}

/**
 * Deletes each row with its audit event (and the events of an item planned from a read); answers
 * the deleted rows in order, null for one not there (or not the tenant's, or no longer as read).
 */
export async function deleteAuditedRows(db: Db, table: string, objectType: string, items: DeletedItem[]): Promise<Array<StoredObject | null>> {
  if (items.length === 0) return [];
  const audited = auditRows.inStatement;
  const sorted = inIdOrder(items, (item) => item.id);
  const events = writtenEvents(sorted, 'deleted');
  const found = await rows<StoredObject & { n: string }>(db,
    `with u as (${itemsSql(table, audited, ['id', 'org_id', 'environment', 'expected', 'event_id', 'actor'])}),
     deleted as (
       delete from ${table} t using u
        where t.id = u.id and t.org_id = u.org_id and t.environment = u.environment and ${asReadSql('t.data')}
        returning ${STORED_ROW.split(', ').map((column) => `t.${column}`).join(', ')}, t.org_id, t.environment, u.event_id, u.actor, u.n)${audited ? `,
     audit as (${auditDeletedSql(table, objectType)})` : ''}${events ? `,
     event as (${events.sql})` : ''}
     select ${STORED_ROW}, n from deleted`,
    [
      items[0].audit,
      sorted.map((item) => item.id), sorted.map((item) => item.tenant.orgId), sorted.map((item) => item.tenant.environment),
      expectedData(sorted), sorted.map(() => (audited ? newId('aud') : null)), sorted.map((item) => item.audit), sorted.length,
      ...(events?.bindings ?? []),
    ]);
  return answerInOrder(items, sorted, found);
}
