/** SQL of sandbox verification beyond ./repository.ts: the entity's new data. */
import { rows, type Db } from '../../db/connection.ts';
import type { Tenant } from '../../engine/family.ts';

/** Replaces an entity's data. */
export async function writeEntityData(tx: Db, tenant: Tenant, id: string, data: Record<string, unknown>): Promise<void> {
  await rows(tx, 'update entities set data = ?::jsonb, modified_at = now() where id = ? and org_id = ? and environment = ?',
    [JSON.stringify(data), id, tenant.orgId, tenant.environment]);
}
