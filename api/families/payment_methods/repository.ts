/** Payment method SQL beyond the generic operations: the owning account, defaults per account. */
import { auditRows, createdAudit, ownAuditSql } from '../../db/auditStatement.ts';
import { rows, type Db } from '../../db/connection.ts';
import { JSONB_LIST, jsonList } from '../../db/jsonList.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import { tenantScan } from '../../db/tenant.ts';
import { METHOD_ACCOUNT_SQL } from './accountSql.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';

/** A method created in another family's statement (a payment's inline card), with the actor that made it. */
export interface MethodItem {
  tenant: Tenant;
  row: StoredObject;
  audit: string | null;
}

/**
 * The insert of new payment methods, for data-modifying CTEs of a larger statement (a payment's):
 * `ctes` defines `method_in` (the rows as sent) and `method` (the rows stored); `audited` selects
 * their audit events' inputs for the statement's audit part, when the statement audits its rows.
 */
export function methodsInsert(items: MethodItem[]): { ctes: string; bindings: unknown[]; audited: string } {
  const audit = auditRows.inStatement;
  const built = createdAudit('payment_method', items, audit);
  return {
    ctes: `method_in as (
       select *${audit ? `, ${ownAuditSql('payment_methods')} as own_audit` : ''}
         from unnest(?::text[], ?::text[], ?::text[], ?::text[], ${JSONB_LIST}, ${JSONB_LIST}, ?::text[], ?::text[], ?::text[], ${JSONB_LIST})
           as m(id, org_id, environment, type, data, built, keys, actor, event_id, event)),
     method as (
       insert into payment_methods (id, org_id, environment, type, data)
       select id, org_id, environment, type, data from method_in
       returning id${audit ? ', type, data' : ''})`,
    bindings: [
      items.map((item) => item.row.id), items.map((item) => item.tenant.orgId), items.map((item) => item.tenant.environment),
      items.map((item) => item.row.type), jsonList(items.map((item) => JSON.stringify(item.row.data))),
      jsonList(built.built), built.keys, items.map((item) => item.audit), built.eventIds, jsonList(built.events),
    ],
    audited: `select 'payment_method' as object_type, 'payment_methods' as tbl, i.id, i.org_id, i.environment, i.type, i.data, i.keys, i.actor, m.type as stored_type, m.data as stored_data, i.event_id, i.event, i.built
           from method_in i join method m using (id)`,
  };
}

export async function accountExists(db: Db, tenant: Tenant, id: string): Promise<boolean> {
  const found = await rows(db, 'select 1 from accounts where id = ? and org_id = ? and environment = ?', [id, tenant.orgId, tenant.environment]);
  return found.length > 0;
}

/**
 * Locks and reads the account's other methods that are its `kind` default (found by the account's
 * index, as the search finds them: an account has a few methods, so no order is asked for).
 */
export function lockOtherDefaults(db: Db, tenant: Tenant, accountId: string, kind: 'paying' | 'funding', keepId: string): Promise<StoredObject[]> {
  const scope = tenantScan(tenant);
  return rows<StoredObject>(db,
    `select ${STORED_ROW} from payment_methods
      where ${scope.sql} and ${METHOD_ACCOUNT_SQL} = ? and id <> ? and (data->'account_defaults'->>?) is not null
      for update`,
    [...scope.bindings, accountId, keepId, kind]);
}
