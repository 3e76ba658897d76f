/**
 * Idempotency records (CONTRACT §7). A key is claimed in its own statement; the response of a
 * successful write is stored inside the write's own transaction, so "done" and the effect commit
 * together. A claim is a lease its request renews while it runs: one whose work never committed
 * and whose lease ran out may be taken over.
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

/** A running claim without a lease (made before leases) lapses this long after it was made. */
const UNLEASED_CLAIM_SECONDS = 60;

export interface ClaimLease {
  /** the one request holding the claim: only it renews or releases it */
  claimant: string;
  seconds: number;
}

/**
 * True when this request now owns the key: a new key, a running claim whose lease ran out, or a
 * record older than the retention (which counts as gone).
 */
export async function claimKey(db: Db, tenant: Tenant, key: string, hash: string, lease: ClaimLease, retentionSeconds: number): Promise<boolean> {
  const result = await db.raw(
    `insert into idempotency_keys as k (org_id, environment, key, request_hash, state, claimant, lease_until)
     values (?, ?, ?, ?, 'running', ?, now() + make_interval(secs => ?))
     on conflict (org_id, environment, key) do update
        set request_hash = excluded.request_hash, created_at = now(), state = 'running', response_status = null, response_body = null,
            claimant = excluded.claimant, lease_until = excluded.lease_until
      where (k.state = 'running' and coalesce(k.lease_until, k.created_at + make_interval(secs => ?)) < now())
         or k.created_at < now() - make_interval(secs => ?)
     returning key`,
    [tenant.orgId, tenant.environment, key, hash, lease.claimant, lease.seconds, UNLEASED_CLAIM_SECONDS, retentionSeconds],
  );
  return result.rows.length > 0;
}

export interface HeldClaim {
  tenant: Tenant;
  key: string;
  claimant: string;
}

/** Extends the leases of claims whose requests still run, in one statement for all of them. */
export async function renewClaims(db: Db, claims: readonly HeldClaim[], leaseSeconds: number): Promise<void> {
  await db.raw(
    `update idempotency_keys k set lease_until = now() + make_interval(secs => ?)
       from unnest(?::text[], ?::text[], ?::text[], ?::uuid[]) as c(org_id, environment, key, claimant)
      where k.org_id = c.org_id and k.environment = c.environment and k.key = c.key and k.claimant = c.claimant and k.state = 'running'`,
    [leaseSeconds, claims.map((c) => c.tenant.orgId), claims.map((c) => c.tenant.environment), claims.map((c) => c.key), claims.map((c) => c.claimant)],
  );
}

export async function findKey(db: Db, tenant: Tenant, key: string): Promise<IdempotencyRecord | null> {
  const result = await db.raw(
    `select request_hash, state, response_status, response_body, false as stale
       from idempotency_keys where org_id = ? and environment = ? and key = ?`,
    [tenant.orgId, tenant.environment, key],
  );
  return result.rows[0] ?? null;
}

/**
 * Stores the answer of the request holding the claim; false when `claimant` holds it no longer (its
 * lease ran out while its process stalled, and a retry took the key over): that request's effect
 * must not commit beside the retry's.
 */
export async function completeKey(db: Db, tenant: Tenant, key: string, claimant: string, status: number, body: unknown): Promise<boolean> {
  const result = await db.raw(
    `update idempotency_keys set state = 'done', response_status = ?, response_body = ?
      where org_id = ? and environment = ? and key = ? and claimant = ? and state = 'running'
      returning key`,
    [status, JSON.stringify(body), tenant.orgId, tenant.environment, key, claimant],
  );
  return result.rows.length > 0;
}

/** Frees a claim its request leaves without an answer to keep; a claim another request took over stays. */
export async function releaseKey(db: Db, tenant: Tenant, key: string, claimant: string): Promise<void> {
  await db.raw(
    `delete from idempotency_keys where org_id = ? and environment = ? and key = ? and state = 'running' and claimant = ?`,
    [tenant.orgId, tenant.environment, key, claimant],
  );
}
