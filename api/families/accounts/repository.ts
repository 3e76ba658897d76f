/** Account queries beyond the generic ones. */
import { rows, type Db } from '../../db/connection.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';

export async function findProcessingAccount(db: Db, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const result = await db.raw(
    `select id, type, data, created_at, modified_at from accounts
      where id = ? and org_id = ? and environment = ? and type = 'processing'`,
    [id, tenant.orgId, tenant.environment],
  );
  return result.rows[0] ?? null;
}

/** The environment's default processing account: the first one created. */
export async function defaultProcessingAccount(db: Db, tenant: Tenant): Promise<StoredObject | null> {
  const result = await db.raw(
    `select id, type, data, created_at, modified_at from accounts
      where org_id = ? and environment = ? and type = 'processing'
      order by created_at, id limit 1`,
    [tenant.orgId, tenant.environment],
  );
  return result.rows[0] ?? null;
}

export async function hasDependentCustomers(db: Db, tenant: Tenant, processingIds: string[]): Promise<Array<{ customer_id: string; processing_id: string }>> {
  if (processingIds.length === 0) return [];
  const result = await db.raw(
    `select id as customer_id, data->>'primary_processing_id' as processing_id from accounts
      where org_id = ? and environment = ? and type = 'customer'
        and data->>'primary_processing_id' = any(?::text[])
      limit 1`,
    [tenant.orgId, tenant.environment, processingIds],
  );
  return result.rows;
}

/** The paying default of each account: the method whose account_defaults.paying covers payments. */
export async function payingDefaults(db: Db, tenant: Tenant, accountIds: string[]): Promise<Map<string, string>> {
  const found = await rows<{ account_id: string; id: string }>(db,
    `select distinct on (data->>'account_id') data->>'account_id' as account_id, id from payment_methods
      where org_id = ? and environment = ? and data->>'account_id' = any(?::text[])
        and data->'account_defaults'->>'paying' in ('payments', 'all')
      order by data->>'account_id', modified_at desc`,
    [tenant.orgId, tenant.environment, accountIds]);
  return new Map(found.map((r) => [r.account_id, r.id]));
}

export async function clearPayingDefault(db: Db, tenant: Tenant, accountId: string): Promise<void> {
  await rows(db,
    `update payment_methods set data = data #- '{account_defaults,paying}', modified_at = now()
      where org_id = ? and environment = ? and data->>'account_id' = ? and data->'account_defaults'->>'paying' is not null`,
    [tenant.orgId, tenant.environment, accountId]);
}

/** Marks one of the account's methods as its paying default; false when it is not the account's. */
export async function makePayingDefault(db: Db, tenant: Tenant, accountId: string, methodId: string): Promise<boolean> {
  const owned = await rows(db, `select 1 from payment_methods where id = ? and org_id = ? and environment = ? and data->>'account_id' = ?`,
    [methodId, tenant.orgId, tenant.environment, accountId]);
  if (owned.length === 0) return false;
  await clearPayingDefault(db, tenant, accountId);
  await rows(db,
    `update payment_methods set data = jsonb_set(data, '{account_defaults}', coalesce(data->'account_defaults', '{}'::jsonb) || '{"paying": "all"}'), modified_at = now()
      where id = ?`,
    [methodId]);
  return true;
}
