/**
 * Changes and deletes of rows of one family table, each written with its audit event by one
 * statement (the update and delete door in api/engine/operations.ts), alone or for several requests
 * at once (group commit). Each event has its own request's actor; the table's update and delete
 * triggers leave the statement's rows to it (migration 20261204000100), as they leave a create
 * statement's (auditedRows.ts).
 *
 * The event is the trigger's to the byte: the statement computes it in the database from the row
 * it replaced and the row as stored (after any BEFORE trigger), with the trigger's own functions
 * (`audit_changes` over `audit_fields`, a changed secret named with its values redacted by
 * `audit_secret_changes`, the step named by `audit_action`), and writes none for a change that
 * changed no field.
 *
 * A change computed from a row read without its lock names the version it read (`xmin`): the
 * statement writes it only over that version, and answers null for it otherwise (the row changed
 * meanwhile: the caller reads it again), so no concurrent change is lost. A change made under the
 * row's lock names none. With SETTLE_AUDIT_BY=trigger (`auditRows.inStatement` false) the
 * statement writes no event and the triggers audit it, with the first change's actor.
 */
import { AUDIT_SETTING_SQL } from './auditContext.ts';
import { auditedTableSql, auditRows, ownAuditSql } from './auditStatement.ts';
import { rows, type Db } from './connection.ts';
import { STORED_ROW, type StoredObject } from './storedRow.ts';
import { tenantCheck, type Tenant } from './tenant.ts';
import { newId } from '../ids.ts';

/** A stored row and the version it was read at. */
export interface VersionedRow {
  row: StoredObject;
  version: string;
}

/** A change to write: the row as changed, the version it was computed from, and its request's actor setting. */
export interface ChangedItem {
  tenant: Tenant;
  next: StoredObject;
  /** the `xmin` of the row the change was computed from; null when the caller holds the row's lock */
  version: string | null;
  audit: string | null;
}

/** A row to delete, as `ChangedItem` names it. */
export type DeletedItem = Omit<ChangedItem, 'next'> & { id: string };

/** The row of `id` in the tenant (and of `type`), with its version, read without a lock. */
export async function selectVersioned(db: Db, table: string, tenant: Tenant, id: string, type?: string): Promise<VersionedRow | null> {
  const where = tenantCheck(tenant);
  const found = await rows<StoredObject & { version: string }>(db,
    `select ${STORED_ROW}, xmin::text as version from ${table} where id = ? and ${where.sql}${type ? ' and type = ?' : ''}`,
    [id, ...where.bindings, ...(type ? [type] : [])]);
  if (!found[0]) return null;
  const { version, ...row } = found[0];
  return { row, version };
}

/** The event of each changed row whose fields changed: the trigger's update branch over `changed`. */
function auditChangedSql(table: string, objectType: string): string {
  const before = `jsonb_build_object('type', c.prior_type, 'data', c.prior_data)`;
  const after = `jsonb_build_object('type', c.type, 'data', c.data)`;
  return `insert into audit_events (id, org_id, environment, data)
       select coalesce(d.event_id, audit_id()), d.org_id, d.environment,
              audit_data(audit_context_of(coalesce(d.actor, current_setting('settle.audit', true), '')),
                         audit_action('${objectType}', d.type, d.prior_data->>'status', d.data->>'status'), '${objectType}', d.id, d.changes)
         from (select c.*, audit_changes(audit_fields(${before}), audit_fields(${after}))
                             || audit_secret_changes(audit_row_fields(${before}), audit_row_fields(${after}), '') as changes
                 from changed c) d
        where d.changes <> '{}' and ${auditedTableSql(`'${table}'`, 'update')}
       returning 1`;
}

/** The event of each deleted row: the trigger's delete branch over `deleted`. */
function auditDeletedSql(table: string, objectType: string): string {
  return `insert into audit_events (id, org_id, environment, data)
       select coalesce(d.event_id, audit_id()), d.org_id, d.environment,
              audit_data(audit_context_of(coalesce(d.actor, current_setting('settle.audit', true), '')), 'delete', '${objectType}', d.id,
                         audit_changes(audit_fields(jsonb_build_object('type', d.type, 'data', d.data)), null))
         from deleted d
        where coalesce(current_setting('settle.test_data_reset', true), '') = '' and ${auditedTableSql(`'${table}'`, 'delete')}
       returning 1`;
}

/**
 * The rows the statement's `u` part names, with the statement's marks: the actor of the triggers
 * it fires (the first item's) and, when it audits, its own audit of `table`.
 */
function itemsSql(table: string, audited: boolean, columns: string[]): string {
  const marks = [`${AUDIT_SETTING_SQL} as acting`, ...(audited ? [`${ownAuditSql(table)} as own_audit`] : [])];
  const types = columns.map((column) => (column === 'data' ? '?::jsonb[]' : '?::text[]'));
  return `select *, ${marks.join(', ')}
       from unnest(${types.join(', ')}) with ordinality as u(${columns.join(', ')}, n)`;
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

/**
 * Writes each change over the row it replaces, with its audit event; answers the stored rows in
 * order, null for a change whose row is gone or no longer at its version. `table` and
 * `objectType` are a family's own names (never input).
 */
export async function updateAuditedRows(db: Db, table: string, objectType: string, items: ChangedItem[]): Promise<Array<StoredObject | null>> {
  if (items.length === 0) return [];
  const audited = auditRows.inStatement;
  const sorted = inIdOrder(items, (item) => item.next.id);
  const found = await rows<StoredObject & { n: string }>(db,
    `with u as (${itemsSql(table, audited, ['id', 'org_id', 'environment', 'version', 'data', 'event_id', 'actor'])}),
     changed as (
       update ${table} t set data = u.data, modified_at = now()
         from u join ${table} o on o.id = u.id
        where t.id = u.id and t.org_id = u.org_id and t.environment = u.environment and (u.version is null or t.xmin = u.version::xid)
        returning ${STORED_ROW.split(', ').map((column) => `t.${column}`).join(', ')}, t.org_id, t.environment,
                  o.type as prior_type, o.data as prior_data, u.event_id, u.actor, u.n)${audited ? `,
     audit as (${auditChangedSql(table, objectType)})` : ''}
     select ${STORED_ROW}, n from changed`,
    [
      items[0].audit,
      sorted.map((item) => item.next.id), sorted.map((item) => item.tenant.orgId), sorted.map((item) => item.tenant.environment),
      sorted.map((item) => item.version), sorted.map((item) => JSON.stringify(item.next.data)),
      sorted.map(() => (audited ? newId('aud') : null)), sorted.map((item) => item.audit),
    ]);
  return answerInOrder(items, sorted, found);
}

/** Deletes each row (at its version, when it names one) with its audit event; answers the deleted rows in order, null for one gone or changed. */
export async function deleteAuditedRows(db: Db, table: string, objectType: string, items: DeletedItem[]): Promise<Array<StoredObject | null>> {
  if (items.length === 0) return [];
  const audited = auditRows.inStatement;
  const sorted = inIdOrder(items, (item) => item.id);
  const found = await rows<StoredObject & { n: string }>(db,
    `with u as (${itemsSql(table, audited, ['id', 'org_id', 'environment', 'version', 'event_id', 'actor'])}),
     deleted as (
       delete from ${table} t using u
        where t.id = u.id and t.org_id = u.org_id and t.environment = u.environment and (u.version is null or t.xmin = u.version::xid)
        returning ${STORED_ROW.split(', ').map((column) => `t.${column}`).join(', ')}, t.org_id, t.environment, u.event_id, u.actor, u.n)${audited ? `,
     audit as (${auditDeletedSql(table, objectType)})` : ''}
     select ${STORED_ROW}, n from deleted`,
    [
      items[0].audit,
      sorted.map((item) => item.id), sorted.map((item) => item.tenant.orgId), sorted.map((item) => item.tenant.environment),
      sorted.map((item) => item.version), sorted.map(() => (audited ? newId('aud') : null)), sorted.map((item) => item.audit),
    ]);
  return answerInOrder(items, sorted, found);
}
