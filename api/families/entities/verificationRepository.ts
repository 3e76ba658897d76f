/** SQL of sandbox verification beyond ./repository.ts: the rows it settles and their new data. */
import { rows, type Db } from '../../db/connection.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import { tenantScan } from '../../db/tenant.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';

/** Replaces an entity's data. */
export async function writeEntityData(tx: Db, tenant: Tenant, id: string, data: Record<string, unknown>): Promise<void> {
  await rows(tx, 'update entities set data = ?::jsonb, modified_at = now() where id = ? and org_id = ? and environment = ?',
    [JSON.stringify(data), id, tenant.orgId, tenant.environment]);
}

/** Replaces an account's data. */
export async function writeAccountData(tx: Db, tenant: Tenant, id: string, data: Record<string, unknown>): Promise<void> {
  await rows(tx, 'update accounts set data = ?::jsonb, modified_at = now() where id = ? and org_id = ? and environment = ?',
    [JSON.stringify(data), id, tenant.orgId, tenant.environment]);
}

/** The processing accounts the entity backs that still wait on its verification, locked, by id. */
export async function lockPendingProcessingAccounts(tx: Db, tenant: Tenant, entityId: string): Promise<StoredObject[]> {
  const scope = tenantScan(tenant);
  return rows<StoredObject>(tx,
    `select ${STORED_ROW} from accounts
      where ${scope.sql} and data->>'entity_id' = ? and type = 'processing' and data->'processing'->>'status' = 'pending'
      order by id for update`,
    [...scope.bindings, entityId]);
}
