/** Payment method SQL beyond the generic operations: the owning account, defaults per account. */
import { rows, type Db } from '../../db/connection.ts';
import { tenantScan } from '../../db/tenant.ts';
import { METHOD_ACCOUNT_SQL } from './accountSql.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';

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
      where ${scope.sql} and ${METHOD_ACCOUNT_SQL} = ? and id <> ? and (data->'account_defaults'->>?) is not null`,
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
      where ${scope.sql} and ${METHOD_ACCOUNT_SQL} = ? and id is distinct from ?
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
