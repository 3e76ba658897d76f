/**
 * Rows of one family table created by several requests at once, written with their audit events
 * by one statement (group commit of one-row creates: `oneRowCreate` in api/engine/operations.ts).
 * Each event has its own request's actor and is built here whole (statement.ts), so the database
 * only checks that the row was stored as sent; the table's audit trigger leaves the statement's
 * rows to it, as for a card payment's statement.
 */
import { AUDIT_SETTING_SQL } from '../../db/auditContext.ts';
import { rows, type Db } from '../../db/connection.ts';
import { STORED_ROW, type StoredObject } from '../../db/storedRow.ts';
import type { Tenant } from '../../db/tenant.ts';
import { auditCreatedSql, createdChanges, createdEvent, ownAuditSql } from './statement.ts';

export interface CreatedItem {
  tenant: Tenant;
  row: StoredObject;
  /** the `settle.audit` setting of the request that created it */
  audit: string | null;
}

/** `table` and `objectType` are a family's own names (never input); answers the stored rows in order. */
export async function insertAuditedRows(db: Db, table: string, objectType: string, items: CreatedItem[]): Promise<StoredObject[]> {
  const built = items.map((item) => createdChanges(item.row.type, item.row.data));
  const events = items.map((item, i) => createdEvent(item.audit, objectType, item.row.id, built[i]));
  const found = await rows<StoredObject>(db,
    `with row_in as (
       select *, ${ownAuditSql(table)} as own_audit
         from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::jsonb[], ?::text[], ?::jsonb[], ?::text[], ?::text[]) with ordinality
           as r(id, org_id, environment, type, data, event_id, event, keys, actor, n)),
     inserted as (
       insert into ${table} (id, org_id, environment, type, data)
       select id, org_id, environment, type, data from row_in order by n
       returning ${STORED_ROW}, to_jsonb(${table}) as stored),
     audit as (${auditCreatedSql(`
         select '${objectType}' as object_type, '${table}' as tbl, i.id, i.org_id, i.environment, i.type, i.data, i.event_id, i.event, i.keys, i.actor, s.stored
           from row_in i join inserted s using (id)`, 'events')})
     -- an actor for the audit triggers, as this statement is its own transaction
     select ${STORED_ROW.split(', ').map((column) => `inserted.${column}`).join(', ')}, ${AUDIT_SETTING_SQL} as actor from inserted`,
    [
      items.map((item) => item.row.id), items.map((item) => item.tenant.orgId), items.map((item) => item.tenant.environment),
      items.map((item) => item.row.type), items.map((item) => JSON.stringify(item.row.data)),
      events.map((e) => e?.id ?? null), events.map((e) => e?.data ?? null), built.map((b) => b?.keys ?? null), items.map((item) => item.audit),
      items[0].audit,
    ]);
  const byId = new Map(found.map((row) => {
    const { actor: _actor, ...stored } = row as StoredObject & Record<string, unknown>;
    return [stored.id, stored as StoredObject];
  }));
  return items.map((item) => byId.get(item.row.id)!);
}
