/**
 * `Idempotency-Key` on POST/PUT: the same key and body answer the stored response again; the same
 * key with another body, or while the first request still runs, is 409. One effect per key, even
 * under concurrent duplicates: the claim is a primary-key insert.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Db } from '../db/connection.ts';
import { claimKey, completeKey, findKey, releaseKey, renewClaims, type HeldClaim } from '../db/idempotency.ts';
import { badRequest, conflict, errorResponse } from '../errors.ts';
import type { RequestState } from './state.ts';

/**
 * How long a claim outlives the last sign of its request. The retry of a request that cannot end
 * its claim (its process died, or its database went away mid-failover) waits at most this long.
 */
const LEASE_SECONDS = 5;
/** How often a running request's lease is renewed: well inside the lease, so a busy moment does not lose it. */
const RENEW_EVERY_MS = 1000;

/** The claims of one process's requests still running, their leases renewed together once a second. */
class ClaimLeases {
  readonly #db: Db;
  readonly #held = new Map<string, HeldClaim>();
  #timer: NodeJS.Timeout | null = null;
  #renewing = false;

  constructor(db: Db) {
    this.#db = db;
  }

  hold(claim: HeldClaim): void {
    this.#held.set(claim.claimant, claim);
    this.#timer ??= setInterval(() => void this.#renew(), RENEW_EVERY_MS).unref();
  }

  drop(claimant: string): void {
    this.#held.delete(claimant);
    if (this.#held.size > 0 || !this.#timer) return;
    clearInterval(this.#timer);
    this.#timer = null;
  }

  async #renew(): Promise<void> {
    if (this.#renewing || this.#held.size === 0) return;
    this.#renewing = true;
    try {
      await renewClaims(this.#db, [...this.#held.values()], LEASE_SECONDS);
    } catch {
      // The database is away: the leases run out, and the requests holding them fail with it.
    } finally {
      this.#renewing = false;
    }
  }
}

const leasesByDb = new WeakMap<Db, ClaimLeases>();

function leasesOf(db: Db): ClaimLeases {
  let leases = leasesByDb.get(db);
  if (!leases) leasesByDb.set(db, leases = new ClaimLeases(db));
  return leases;
}

/** Keys sorted at every level: the same request in any encoding (JSON, form, multipart) hashes the same. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function requestHash(ctx: Context & { state: RequestState }): string {
  return createHash('sha256')
    .update(`${ctx.method}\n${ctx.path}\n${ctx.querystring}\n${ctx.state.version}\n`)
    .update(canonicalJson(ctx.state.body ?? {}))
    .digest('hex');
}

/**
 * The stored key names the credential that sent it (a secret key's id, or a client token): a
 * request under another credential, another key of the same org included, never receives a
 * stored answer, which can hold a value shown once (a webhook's sender_secret).
 */
function scopedKey(ctx: Context & { state: RequestState }, key: string): string {
  const principal = ctx.state.principal;
  if (principal?.kind === 'client') return `client:${principal.tokenId}:${key}`;
  if (principal?.kind === 'secret') return `key:${principal.keyId}:${key}`;
  return key;
}

/** Responses can hold values shown once (a webhook's sender_secret): they are stored sealed. */
function sealResponse(ctx: Context & { state: RequestState }, body: unknown): { sealed: string } {
  return { sealed: ctx.state.services.domain.vault.encrypt(JSON.stringify(body)) };
}

function openResponse(ctx: Context & { state: RequestState }, stored: unknown): unknown {
  const sealed = (stored as { sealed?: unknown } | null)?.sealed;
  return typeof sealed === 'string' ? JSON.parse(ctx.state.services.domain.vault.decrypt(sealed)) : stored;
}

export async function idempotency(ctx: Context & { state: RequestState }, next: Next): Promise<void> {
  const given = ctx.get('Idempotency-Key');
  if (!given || (ctx.method !== 'POST' && ctx.method !== 'PUT')) return next();
  if (given.length > 255) throw badRequest('Idempotency-Key', { 'Idempotency-Key': 'At most 255 characters' });
  const key = scopedKey(ctx, given);
  const { db } = ctx.state.services;
  const tenant = ctx.state.tenant!;
  const hash = requestHash(ctx);
  const retentionSeconds = ctx.state.services.config.idempotencyRetentionMs / 1000;
  const claimant = randomUUID();
  if (!(await claimKey(db, tenant, key, hash, { claimant, seconds: LEASE_SECONDS }, retentionSeconds))) return replay(ctx, db, key, hash);
  const claim = { key, hash, claimant, completed: false };
  ctx.state.idempotency = claim;
  const leases = leasesOf(db);
  leases.hold({ tenant, key, claimant });
  try {
    await next();
    // No route answered (a 404 is made further out): nothing to keep under this key.
    if (ctx.body === undefined) await releaseKey(db, tenant, key, claimant);
    // A claim taken over by a retry keeps the retry's answer.
    else if (!claim.completed) await completeKey(db, tenant, key, claimant, ctx.status, sealResponse(ctx, ctx.body));
  } catch (error) {
    const response = errorResponse(error);
    // A 4xx is an answer, kept like any other; a 5xx leaves the key free for a retry.
    if (claim.completed) throw error;
    if (response.status < 500) await completeKey(db, tenant, key, claimant, response.status, sealResponse(ctx, response.body));
    // A release the database cannot take now is not needed: the lease, no longer renewed, runs out.
    else await releaseKey(db, tenant, key, claimant).catch(() => {});
    throw error;
  } finally {
    leases.drop(claimant);
  }
}

async function replay(ctx: Context & { state: RequestState }, db: Db, key: string, hash: string): Promise<void> {
  const record = await findKey(db, ctx.state.tenant!, key);
  if (!record) throw conflict('Idempotency-Key is being claimed by another request; retry');
  if (record.request_hash !== hash) throw conflict('Idempotency-Key was used with another request');
  if (record.state !== 'done') throw conflict('A request with this Idempotency-Key is still in flight');
  ctx.status = record.response_status ?? 200;
  ctx.set('Idempotent-Replayed', 'true');
  ctx.body = openResponse(ctx, record.response_body);
}

/**
 * Stores the response inside the write's transaction, so the effect and "done" commit together —
 * or neither does: a request whose claim a retry took over (its lease ran out while its process
 * stalled) throws here, and its transaction, effect included, rolls back.
 */
export async function completeInTransaction(ctx: Context & { state: RequestState }, tx: Db, status: number, body: unknown): Promise<void> {
  const claim = ctx.state.idempotency;
  if (!claim) return;
  if (!(await completeKey(tx, ctx.state.tenant!, claim.key, claim.claimant, status, sealResponse(ctx, body)))) {
    throw conflict('This request held its Idempotency-Key past its lease and a retry took the key over: the retry\'s answer stands');
  }
  claim.completed = true;
}
