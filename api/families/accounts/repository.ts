/** Account queries beyond the generic ones. */
import type { Db } from '../../db/connection.ts';
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
