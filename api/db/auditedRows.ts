/**
 * Rows of one family table created by several requests at once, written with their audit events
 * by one statement (group commit of one-row creates planned on the pool: the create door in
 * api/engine/operations.ts).
 * Each event has its own request's actor and is built here whole (statement.ts), so the database
 * only checks that the row was stored as sent; the table's audit trigger leaves the statement's
 * rows to it, as for a card payment's statement. The outbox events each creation causes are
 * written by the same statement (api/db/events.ts), so they commit with the rows or not at all.
 */
import { AUDIT_SETTING_SQL } from './auditContext.ts';
import { rows, type Db } from './connection.ts';
import { tenantsEventsInsert, type EventDraft } from './events.ts';
import { JSONB_LIST, jsonList } from './jsonList.ts';
import { STORED_ROW, type StoredObject } from './storedRow.ts';
import type { Tenant } from './tenant.ts';
import { auditCreatedSql, createdAudit, ownAuditSql } from './auditStatement.ts';

export interface CreatedItem {
  tenant: Tenant;
  row: StoredObject;
  /** the `settle.audit` setting of the request that created it */
  audit: string | null;
  /** the outbox events its creation causes */
  events?: EventDraft[];
}

/** `table` and `objectType` are a family's own names (never input); answers the stored rows in order. */
export async function insertAuditedRows(db: Db, table: string, objectType: string, items: CreatedItem[]): Promise<StoredObject[]> {
  const audit = createdAudit(objectType, items);
  const events = items.some((item) => item.events?.length) ? tenantsEventsInsert(items.map((item) => ({ tenant: item.tenant, drafts: item.events ?? [] }))) : null;
  const found = await rows<StoredObject>(db,
    `with row_in as (
       select *, ${ownAuditSql(table)} as own_audit
         from unnest(?::text[], ?::text[], ?::text[], ?::text[], ${JSONB_LIST}, ?::text[], ${JSONB_LIST}, ${JSONB_LIST}, ?::text[], ?::text[]) with ordinality
           as r(id, org_id, environment, type, data, event_id, event, built, keys, actor, n)),
     inserted as (
       insert into ${table} (id, org_id, environment, type, data)
       select id, org_id, environment, type, data from row_in order by n
       returning ${STORED_ROW}),
     audit as (${auditCreatedSql(`
         select '${objectType}' as object_type, '${table}' as tbl, i.id, i.org_id, i.environment, i.type, i.data, i.keys, i.actor,
                s.type as stored_type, s.data as stored_data, i.event_id, i.event, i.built
           from row_in i join inserted s using (id)`)})${events ? `,
     event as (${events.sql})` : ''}
     -- an actor for the audit triggers, as this statement is its own transaction
     select ${STORED_ROW.split(', ').map((column) => `inserted.${column}`).join(', ')}, ${AUDIT_SETTING_SQL} as actor from inserted`,
    [
      items.map((item) => item.row.id), items.map((item) => item.tenant.orgId), items.map((item) => item.tenant.environment),
      items.map((item) => item.row.type), jsonList(items.map((item) => JSON.stringify(item.row.data))),
      audit.eventIds, jsonList(audit.events), jsonList(audit.built), audit.keys, items.map((item) => item.audit),
      ...(events?.bindings ?? []),
      items[0].audit,
    ]);
  const byId = new Map(found.map((row) => {
    const { actor: _actor, ...stored } = row as StoredObject & Record<string, unknown>;
    return [stored.id, stored as StoredObject];
  }));
  return items.map((item) => byId.get(item.row.id)!);
}
