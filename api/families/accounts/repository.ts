/** Account queries beyond the generic ones. */
import { rows, type Db } from '../../db/connection.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';
import { tenantScan } from '../../db/tenant.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import { METHOD_ACCOUNT_SQL } from '../payment_methods/accountSql.ts';

export async function findProcessingAccount(db: Db, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const result = await db.raw(
    `select ${STORED_ROW} from accounts
      where id = ? and org_id = ? and environment = ? and type = 'processing'`,
    [id, tenant.orgId, tenant.environment],
  );
  return result.rows[0] ?? null;
}

/** The first customer of the environment with this e-mail (any case), if any. */
export async function customerByEmail(db: Db, tenant: Tenant, email: string): Promise<StoredObject | null> {
  const scope = tenantScan(tenant);
  const found = await rows<StoredObject>(db,
    `select ${STORED_ROW} from accounts
      where ${scope.sql} and type = 'customer' and lower(data->>'email') = lower(?)
      order by created_at, id limit 1`,
    [...scope.bindings, email],
  );
  return found[0] ?? null;
}

/** The environment's default processing account: the first one created. */
export async function defaultProcessingAccount(db: Db, tenant: Tenant): Promise<StoredObject | null> {
  const scope = tenantScan(tenant);
  const found = await rows<StoredObject>(db,
    `select ${STORED_ROW} from accounts
      where ${scope.sql} and type = 'processing'
      order by created_at, id limit 1`,
    scope.bindings,
  );
  return found[0] ?? null;
}

export async function hasDependentCustomers(db: Db, tenant: Tenant, processingIds: string[]): Promise<Array<{ customer_id: string; processing_id: string }>> {
  if (processingIds.length === 0) return [];
  const scope = tenantScan(tenant);
  return rows<{ customer_id: string; processing_id: string }>(db,
    `select id as customer_id, data->>'primary_processing_id' as processing_id from accounts
      where ${scope.sql} and type = 'customer'
        and data->>'primary_processing_id' = any(?::text[])
      limit 1`,
    [...scope.bindings, processingIds],
  );
}

export async function ownsMethod(db: Db, tenant: Tenant, accountId: string, methodId: string): Promise<boolean> {
  const owned = await rows(db, `select 1 from payment_methods where id = ? and org_id = ? and environment = ? and data->>'account_id' = ?`,
    [methodId, tenant.orgId, tenant.environment, accountId]);
  return owned.length > 0;
}

/** The account, locked until the transaction ends. */
export async function lockAccount(db: Db, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const [found] = await rows<StoredObject>(db, `select ${STORED_ROW} from accounts where id = ? and org_id = ? and environment = ? for update`,
    [id, tenant.orgId, tenant.environment]);
  return found ?? null;
}

/** The account's methods that hold its paying default, and `methodId` (when the account's), locked, by id. */
export async function lockPayingCandidates(db: Db, tenant: Tenant, accountId: string, methodId: string | null): Promise<StoredObject[]> {
  const scope = tenantScan(tenant);
  return rows<StoredObject>(db,
    `select ${STORED_ROW} from payment_methods
      where ${scope.sql} and ${METHOD_ACCOUNT_SQL} = ? and (data->'account_defaults'->>'paying' is not null or id = ?)
      order by id for update`,
    [...scope.bindings, accountId, methodId]);
}

/** The processing accounts an entity backs that still wait on its verification, locked, by id. */
export async function lockPendingProcessingAccounts(tx: Db, tenant: Tenant, entityId: string): Promise<StoredObject[]> {
  const scope = tenantScan(tenant);
  return rows<StoredObject>(tx,
    `select ${STORED_ROW} from accounts
      where ${scope.sql} and data->>'entity_id' = ? and type = 'processing' and data->'processing'->>'status' = 'pending'
      order by id for update`,
    [...scope.bindings, entityId]);
}
