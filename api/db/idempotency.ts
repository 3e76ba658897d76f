/**
 * Idempotency records (CONTRACT §7). A key is claimed in its own statement; the response of a
 * successful write is stored inside the write's own transaction, so "done" and the effect commit
 * together. A claim whose work never committed goes stale and may be taken over.
 */
import type { Db } from './connection.ts';
import type { Tenant } from './tenant.ts';

export interface IdempotencyRecord {
  request_hash: string;
  state: 'running' | 'done';
  response_status: number | null;
  response_body: unknown;
  stale: boolean;
}

/** True when this request now owns the key (a record older than the retention counts as gone). */
export async function claimKey(db: Db, tenant: Tenant, key: string, hash: string, staleAfterSeconds: number, retentionSeconds: number): Promise<boolean> {
  const result = await db.raw(
    `insert into idempotency_keys as k (org_id, environment, key, request_hash, state)
     values (?, ?, ?, ?, 'running')
     on conflict (org_id, environment, key) do update
        set request_hash = excluded.request_hash, created_at = now()
      where (k.state = 'running' and k.created_at < now() - make_interval(secs => ?))
         or k.created_at < now() - make_interval(secs => ?)
     returning key`,
    [tenant.orgId, tenant.environment, key, hash, staleAfterSeconds, retentionSeconds],
  );
  return result.rows.length > 0;
}

export async function findKey(db: Db, tenant: Tenant, key: string): Promise<IdempotencyRecord | null> {
  const result = await db.raw(
    `select request_hash, state, response_status, response_body, false as stale
       from idempotency_keys where org_id = ? and environment = ? and key = ?`,
    [tenant.orgId, tenant.environment, key],
  );
  return result.rows[0] ?? null;
}

export async function completeKey(db: Db, tenant: Tenant, key: string, status: number, body: unknown): Promise<void> {
  await db.raw(
    `update idempotency_keys set state = 'done', response_status = ?, response_body = ?
      where org_id = ? and environment = ? and key = ?`,
    [status, JSON.stringify(body), tenant.orgId, tenant.environment, key],
  );
}

export async function releaseKey(db: Db, tenant: Tenant, key: string): Promise<void> {
  await db.raw(`delete from idempotency_keys where org_id = ? and environment = ? and key = ? and state = 'running'`, [tenant.orgId, tenant.environment, key]);
}
