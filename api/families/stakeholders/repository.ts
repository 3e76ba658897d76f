/** Stakeholder SQL beyond the generic operations: the entity a stakeholder belongs to, its ownership. */
import { rows, type Db } from '../../db/connection.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import { tenantScan } from '../../db/tenant.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';

/** The entity a stakeholder names, locked until the transaction ends (its stakeholders change one after another). */
export async function lockEntity(db: Db, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const found = await rows<StoredObject>(db, `select ${STORED_ROW} from entities where id = ? and org_id = ? and environment = ? for update`,
    [id, tenant.orgId, tenant.environment]);
  return found[0] ?? null;
}

/** Ownership percentages of an entity's other stakeholders, summed. */
export async function otherOwnership(db: Db, tenant: Tenant, entityId: string, exceptId: string): Promise<number> {
  const scope = tenantScan(tenant);
  const found = await rows<{ total: string | null }>(db,
    `select sum((data->'association'->'ownership'->>'percentage')::numeric) as total from stakeholders
      where ${scope.sql} and data->>'entity_id' = ? and id <> ? and jsonb_typeof(data->'association'->'ownership'->'percentage') = 'number'`,
    [...scope.bindings, entityId, exceptId]);
  return Number(found[0]?.total ?? 0);
}

