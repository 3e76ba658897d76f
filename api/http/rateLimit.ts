/**
 * Rate limits (CONTRACT §10, §23), on the domain's clock.
 *
 * Every principal draws from a token bucket of `SETTLE_RATE_LIMIT` (`<per second>/<burst>`): a
 * secret key by its id; a client token by the token and by the client's address; a hosted-page
 * request, which carries no credential, by the client's address and by the token in its path.
 * Buckets live in each web process: a throttle of that process's load, costing no query.
 *
 * Card testing: a declined payment made with a client token (a hosted page, an element) counts
 * against the client's address and against the payment link it pays through. Past
 * DECLINES_PER_MINUTE of either within a minute (attempts still in flight counted as declines to
 * come), such payments are refused with 429 before any card reaches the processor. These counts
 * are in the database (api/db/paymentAttempts.ts), so the limit holds across web processes and
 * restarts, whatever `SETTLE_RATE_LIMIT` says.
 */
import type { Context, Next } from 'koa';
import type { RateLimit } from '../config.ts';
import { ApiError, tooManyRequests } from '../errors.ts';
import { hashKeyHex } from '../keys.ts';
import type { Db } from '../db/connection.ts';
import { ATTEMPT_WINDOW_MS, claimAttempt, deleteIdleAttemptRows, releaseAttempt, type AttemptName } from '../db/paymentAttempts.ts';
import type { RequestState } from './state.ts';

type Ctx = Context & { state: RequestState };

export const DECLINES_PER_MINUTE = 10;
/** Buckets kept before a sweep drops the ones that no longer limit anyone (full ones). */
const SWEEP_AT = 10_000;

/** Hosted pages and their frames: no credential in the request, often a token in the path. */
const PAGE = /^\/(?:checkout|elements|pay|enroll)\//;
const TOKEN_IN_PATH = /(?:test_)?client_key_[0-9A-Za-z]+/;

interface Bucket {
  tokens: number;
  updated: number;
}

/** Token buckets by name (`key:<id>`, `token:<hash>`, `ip:<address>`). */
class Buckets {
  readonly #limit: RateLimit;
  readonly #buckets = new Map<string, Bucket>();
  #sweepAt = SWEEP_AT;

  constructor(limit: RateLimit) {
    this.#limit = limit;
  }

  /** Takes one request from each named bucket; the seconds to wait when one of them is empty (then nothing is taken). */
  take(names: string[], time: number): number {
    const buckets = names.map((name) => this.#refilled(name, time));
    const empty = buckets.filter((bucket) => bucket.tokens < 1);
    if (empty.length) return Math.max(...empty.map((bucket) => Math.max(1, Math.ceil((1 - bucket.tokens) / this.#limit.perSecond))));
    for (const bucket of buckets) bucket.tokens -= 1;
    return 0;
  }

  #refilled(name: string, time: number): Bucket {
    const { perSecond, burst } = this.#limit;
    let bucket = this.#buckets.get(name);
    if (!bucket) {
      if (this.#buckets.size >= this.#sweepAt) this.#sweep(time);
      bucket = { tokens: burst, updated: time };
      this.#buckets.set(name, bucket);
    }
    bucket.tokens = Math.min(burst, bucket.tokens + ((time - bucket.updated) / 1000) * perSecond);
    bucket.updated = time;
    return bucket;
  }

  /** A bucket that has filled up again limits no one: forgetting it bounds the memory one address per request could take. */
  #sweep(time: number): void {
    const { perSecond, burst } = this.#limit;
    for (const [name, bucket] of this.#buckets) {
      if (bucket.tokens + ((time - bucket.updated) / 1000) * perSecond >= burst) this.#buckets.delete(name);
    }
    this.#sweepAt = Math.max(SWEEP_AT, this.#buckets.size * 2);
  }
}

/** The bucket names of a request's principal, or of the page it asks for; none for other unauthenticated requests. */
function bucketNames(ctx: Ctx): string[] {
  const principal = ctx.state.principal;
  if (principal?.kind === 'secret') return [`key:${principal.keyId}`];
  if (principal?.kind === 'client') return [`token:${principal.tokenId}`, `ip:${ctx.ip}`];
  if (!PAGE.test(ctx.path)) return [];
  const token = TOKEN_IN_PATH.exec(ctx.path)?.[0];
  return token ? [`ip:${ctx.ip}`, `token:${hashKeyHex(token)}`] : [`ip:${ctx.ip}`];
}

/** A payment a client token makes: the names its declines count against (the address kept only as its hash). */
function declineNames(ctx: Ctx): AttemptName[] | null {
  const principal = ctx.state.principal;
  if (principal?.kind !== 'client' || ctx.method !== 'POST' || ctx.path !== '/transactions') return null;
  const links = new Set<string>();
  if (principal.paymentLinkId) links.add(principal.paymentLinkId);
  const named = ctx.state.body?.payment_link_id;
  if (typeof named === 'string') links.add(named);
  return [{ scope: 'address', key: hashKeyHex(ctx.ip) }, ...[...links].map((link) => ({ scope: 'payment_link', key: link }))];
}

function isDecline(error: unknown): boolean {
  return error instanceof ApiError && error.errorType === 'TransactionDeclined';
}

export function createRateLimiter(db: Db, limit: RateLimit | null, now: () => number = Date.now) {
  const buckets = limit ? new Buckets(limit) : null;
  let pruneAt = 0;
  return {
    /** Before the hosted pages (no credential) and again after authentication (keys and client tokens). */
    async requests(ctx: Ctx, next: Next): Promise<void> {
      if (buckets) {
        const names = bucketNames(ctx);
        const wait = names.length ? buckets.take(names, now()) : 0;
        if (wait > 0) throw tooManyRequests(wait);
      }
      await next();
    },
    /** Around the routes, once the body is read: a client token's payment past the decline limit never reaches the processor. */
    async declinedPayments(ctx: Ctx, next: Next): Promise<void> {
      const names = declineNames(ctx);
      if (!names) return next();
      const at = now();
      const retryAt = await claimAttempt(db, names, at, DECLINES_PER_MINUTE);
      if (retryAt !== null) throw tooManyRequests(Math.max(1, Math.ceil((retryAt - at) / 1000)));
      let declined = false;
      try {
        if (at >= pruneAt) {
          pruneAt = at + ATTEMPT_WINDOW_MS;
          await deleteIdleAttemptRows(db, at);
        }
        await next();
      } catch (error) {
        declined = isDecline(error);
        throw error;
      } finally {
        // A decline keeps its claim for the minute; any other outcome gives it back.
        if (!declined) await releaseAttempt(db, names, at);
      }
    },
  };
}
