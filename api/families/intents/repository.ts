/**
 * SQL of the link tables (`intents`, `payment_activations`) beyond the generic operations, and
 * the jobs links enqueue. Every function takes the caller's connection or transaction.
 */
import { rows, type Db } from '../../db/connection.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import { tenantScan } from '../../db/tenant.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';

/** The two tables a link lives in: link intents and payment activations. */
export type LinkTable = 'intents' | 'payment_activations';

/** A link's row, any tenant: what a page found by its id alone needs. */
export interface LinkRow {
  org_id: string;
  environment: 'test' | 'live';
  type: string;
  data: Record<string, any>;
}

/** The link with this id, whichever tenant it belongs to (the id in a page address is the capability). */
export async function findLinkById(db: Db, table: LinkTable, id: string): Promise<LinkRow | null> {
  const [found] = await rows<LinkRow>(db, `select org_id, environment, type, data from ${table} where id = ?`, [id]);
  return found ?? null;
}

/** The tenant's link, locked for the rest of the transaction; null when there is none. */
export async function lockLink(tx: Db, table: LinkTable, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const [found] = await rows<StoredObject>(tx,
    `select ${STORED_ROW} from ${table} where id = ? and org_id = ? and environment = ? for update`,
    [id, tenant.orgId, tenant.environment]);
  return found ?? null;
}

/** The id of the tenant's element intent behind a client token (by the token's hash, hex), or null. */
export async function findIntentIdByTokenHash(tx: Db, tenant: Tenant, tokenHash: string): Promise<string | null> {
  const scope = tenantScan(tenant);
  const [intent] = await rows<{ id: string }>(tx, `select id from intents where ${scope.sql} and data->>'token_hash' = ?`, [...scope.bindings, tokenHash]);
  return intent?.id ?? null;
}

/** Whether a client token still has its one use, locking its row until the caller's transaction ends. */
export async function lockUnspentToken(tx: Db, tokenHash: string): Promise<boolean> {
  const found = await rows(tx,
    `select 1 from access_tokens
      where token_hash = decode(?, 'hex') and uses = 0 and status = 'active' and expires_at > now()
        for update`,
    [tokenHash]);
  return found.length > 0;
}

/** Spends a client token's one use (by its hash, hex): false when it was already used, expired or revoked. */
export async function spendToken(tx: Db, tokenHash: string): Promise<boolean> {
  const spent = await rows(tx,
    `update access_tokens set uses = uses + 1
      where token_hash = decode(?, 'hex') and uses = 0 and status = 'active' and expires_at > now()
     returning 1`,
    [tokenHash]);
  return spent.length > 0;
}

/** The tenant's pending element intent behind a client token (by the token's hash, hex), locked; null when there is none. */
export async function lockPendingIntentOfToken(tx: Db, tenant: Tenant, tokenHash: string): Promise<StoredObject | null> {
  const scope = tenantScan(tenant);
  const [intent] = await rows<StoredObject>(tx,
    `select ${STORED_ROW} from intents where ${scope.sql} and data->>'token_hash' = ? and data->>'status' = 'pending' for update`,
    [...scope.bindings, tokenHash]);
  return intent ?? null;
}

/**
 * Enqueues `task` at `runAt` in the caller's transaction; a job with the same key is replaced,
 * so enqueueing again never runs it twice.
 */
export async function enqueueLinkJob(db: Db, task: string, payload: object, runAt: Date | string, jobKey: string): Promise<void> {
  await rows(db, 'select graphile_worker.add_job(?, ?::json, run_at => ?::timestamptz, job_key => ?, max_attempts => 25)',
    [task, JSON.stringify(payload), runAt instanceof Date ? runAt.toISOString() : runAt, jobKey]);
}
