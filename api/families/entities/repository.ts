/** Entity SQL beyond the generic operations: stakeholders by entity, accounts by entity, verification. */
import { rows, type Db } from '../../db/connection.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import { tenantScan } from '../../db/tenant.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';

const ROW = STORED_ROW;

export async function findEntity(db: Db, tenant: Tenant, id: string, options: { forUpdate?: boolean } = {}): Promise<StoredObject | null> {
  const found = await rows<StoredObject>(db,
    `select ${ROW} from entities where id = ? and org_id = ? and environment = ?${options.forUpdate ? ' for update' : ''}`,
    [id, tenant.orgId, tenant.environment]);
  return found[0] ?? null;
}

export async function entitiesByIds(db: Db, tenant: Tenant, ids: string[]): Promise<StoredObject[]> {
  if (ids.length === 0) return [];
  return rows<StoredObject>(db, `select ${ROW} from entities where id = any(?::text[]) and org_id = ? and environment = ?`,
    [ids, tenant.orgId, tenant.environment]);
}

/** Stakeholders of the given entities, oldest first. */
export async function stakeholdersOf(db: Db, tenant: Tenant, entityIds: string[]): Promise<StoredObject[]> {
  if (entityIds.length === 0) return [];
  const scope = tenantScan(tenant);
  return rows<StoredObject>(db,
    `select ${ROW} from stakeholders where ${scope.sql} and data->>'entity_id' = any(?::text[]) order by created_at, id`,
    [...scope.bindings, entityIds]);
}

/** One account backed by any of the entities, or none. */
export async function accountBackedBy(db: Db, tenant: Tenant, entityIds: string[]): Promise<{ id: string; entity_id: string } | null> {
  if (entityIds.length === 0) return null;
  const scope = tenantScan(tenant);
  const found = await rows<{ id: string; entity_id: string }>(db,
    `select id, data->>'entity_id' as entity_id from accounts where ${scope.sql} and data->>'entity_id' = any(?::text[]) limit 1`,
    [...scope.bindings, entityIds]);
  return found[0] ?? null;
}

/** Enqueues a graphile-worker job in the caller's transaction; the key makes a repeat replace, not duplicate. */
export async function scheduleJob(db: Db, task: string, payload: Record<string, unknown>, runAt: Date, jobKey: string): Promise<void> {
  await rows(db, 'select graphile_worker.add_job(?, ?::json, run_at => ?::timestamptz, job_key => ?, max_attempts => 25)',
    [task, JSON.stringify(payload), runAt.toISOString(), jobKey]);
}
