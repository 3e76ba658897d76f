/** Payment method SQL beyond the generic operations: the owning account, defaults per account. */
import { auditRows, createdAudit, ownAuditSql } from '../../db/auditStatement.ts';
import { rows, type Db } from '../../db/connection.ts';
import { tenantScan } from '../../db/tenant.ts';
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
         from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::jsonb[], ?::jsonb[], ?::text[], ?::text[], ?::text[], ?::jsonb[])
           as m(id, org_id, environment, type, data, built, keys, actor, event_id, event)),
     method as (
       insert into payment_methods (id, org_id, environment, type, data)
       select id, org_id, environment, type, data from method_in
       returning id${audit ? ', type, data' : ''})`,
    bindings: [
      items.map((item) => item.row.id), items.map((item) => item.tenant.orgId), items.map((item) => item.tenant.environment),
      items.map((item) => item.row.type), items.map((item) => JSON.stringify(item.row.data)),
      built.built, built.keys, items.map((item) => item.audit), built.eventIds, built.events,
    ],
    audited: `select 'payment_method' as object_type, 'payment_methods' as tbl, i.id, i.org_id, i.environment, i.type, i.data, i.keys, i.actor, m.type as stored_type, m.data as stored_data, i.event_id, i.event, i.built
           from method_in i join method m using (id)`,
  };
}

export async function accountExists(db: Db, tenant: Tenant, id: string): Promise<boolean> {
  const found = await rows(db, 'select 1 from accounts where id = ? and org_id = ? and environment = ?', [id, tenant.orgId, tenant.environment]);
  return found.length > 0;
}

/** Customers whose default was one of these methods have none now (found by key: each method names its account). */
export async function clearAccountPointer(db: Db, methods: StoredObject[]): Promise<void> {
  const accountIds = methods.map((m) => m.data.account_id).filter((id): id is string => typeof id === 'string');
  if (accountIds.length === 0) return;
  await rows(db, `update accounts set data = data - 'default_payment_method', modified_at = now()
    where id = any(?::text[]) and data->>'default_payment_method' = any(?::text[])`, [accountIds, methods.map((m) => m.id)]);
}

export async function clearDefault(db: Db, tenant: Tenant, accountId: string, kind: 'paying' | 'funding', keepId: string): Promise<void> {
  const scope = tenantScan(tenant);
  await rows(db,
    `update payment_methods set data = data #- ?::text[], modified_at = now()
      where ${scope.sql} and data->>'account_id' = ? and id <> ? and (data->'account_defaults'->>?) is not null`,
    [['account_defaults', kind], ...scope.bindings, accountId, keepId, kind]);
}

/**
 * The account's paying default becomes `methodId` (or none): that method is marked
 * `account_defaults.paying = all` unless it already covers payments, the others are unmarked, and
 * the account's `default_payment_method` pointer follows, all in the caller's transaction.
 */
export async function setPayingDefault(db: Db, tenant: Tenant, accountId: string, methodId: string | null, options: { updateAccount: boolean }): Promise<void> {
  const scope = tenantScan(tenant);
  await rows(db,
    `update payment_methods set data = data #- '{account_defaults,paying}', modified_at = now()
      where ${scope.sql} and data->>'account_id' = ? and id is distinct from ?
        and data->'account_defaults'->>'paying' is not null`,
    [...scope.bindings, accountId, methodId]);
  if (methodId) {
    await rows(db,
      `update payment_methods set data = jsonb_set(data, '{account_defaults}', coalesce(data->'account_defaults', '{}'::jsonb) || '{"paying": "all"}'), modified_at = now()
        where id = ? and coalesce(data->'account_defaults'->>'paying', '') not in ('payments', 'all')`,
      [methodId]);
  }
  if (options.updateAccount) {
    await rows(db, `update accounts set data = jsonb_set(data, '{default_payment_method}', to_jsonb(?::text)), modified_at = now() where id = ? and type = 'customer'`,
      [methodId, accountId]);
  }
}
