/**
 * Rate limits (CONTRACT §10, §23), per web process, on the domain's clock.
 *
 * Every principal draws from a token bucket of `SETTLE_RATE_LIMIT` (`<per second>/<burst>`): a
 * secret key by its id; a client token by the token and by the client's address; a hosted-page
 * request, which carries no credential, by the client's address and by the token in its path.
 *
 * Card testing: a declined payment made with a client token (a hosted page, an element) counts
 * against the client's address and against the payment link it pays through. Past
 * DECLINES_PER_MINUTE of either within a minute (attempts still in flight counted as declines to
 * come), such payments are refused with 429 before any card reaches the processor. This holds
 * whatever `SETTLE_RATE_LIMIT` says.
 */
import type { Context, Next } from 'koa';
import type { RateLimit } from '../config.ts';
import { ApiError, tooManyRequests } from '../errors.ts';
import { hashKeyHex } from '../keys.ts';
import type { RequestState } from './state.ts';

type Ctx = Context & { state: RequestState };

export const DECLINES_PER_MINUTE = 10;
const DECLINE_WINDOW_MS = 60_000;
/** Entries kept before a sweep drops the ones that no longer limit anyone (full buckets, old declines). */
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

/**
 * Declined attempts of the last minute by name (`ip:<address>`, `link:<id>`), and the attempts
 * still waiting for the processor: those count too, so a burst of concurrent attempts cannot get
 * more cards to the processor than the limit leaves room for.
 */
class Declines {
  readonly #times = new Map<string, number[]>();
  readonly #inFlight = new Map<string, number>();
  #sweepAt = SWEEP_AT;

  /** Reserves one attempt under every name; when one of them has no room, reserves nothing and answers the seconds to wait. */
  begin(names: string[], time: number): number {
    let wait = 0;
    for (const name of names) {
      const recent = this.#recent(name, time);
      const room = DECLINES_PER_MINUTE - recent.length - (this.#inFlight.get(name) ?? 0);
      if (room > 0) continue;
      // Full of declines: until the oldest that matters leaves the minute. Full of attempts in flight: a moment.
      const freedAt = recent.length >= DECLINES_PER_MINUTE ? recent[recent.length - DECLINES_PER_MINUTE] + DECLINE_WINDOW_MS : time;
      wait = Math.max(wait, Math.max(1, Math.ceil((freedAt - time) / 1000)));
    }
    if (wait === 0) for (const name of names) this.#inFlight.set(name, (this.#inFlight.get(name) ?? 0) + 1);
    return wait;
  }

  /** Ends an attempt `begin` reserved, counting it when the processor declined it. */
  end(names: string[], time: number, declined: boolean): void {
    for (const name of names) {
      const left = (this.#inFlight.get(name) ?? 1) - 1;
      if (left > 0) this.#inFlight.set(name, left);
      else this.#inFlight.delete(name);
    }
    if (!declined) return;
    if (this.#times.size >= this.#sweepAt) this.#sweep(time);
    for (const name of names) this.#times.set(name, [...this.#recent(name, time), time]);
  }

  #recent(name: string, time: number): number[] {
    return (this.#times.get(name) ?? []).filter((at) => at > time - DECLINE_WINDOW_MS);
  }

  #sweep(time: number): void {
    for (const [name, times] of this.#times) if (times.every((at) => at <= time - DECLINE_WINDOW_MS)) this.#times.delete(name);
    this.#sweepAt = Math.max(SWEEP_AT, this.#times.size * 2);
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

/** A payment a client token makes: the names its declines count against. */
function declineNames(ctx: Ctx): string[] | null {
  const principal = ctx.state.principal;
  if (principal?.kind !== 'client' || ctx.method !== 'POST' || ctx.path !== '/transactions') return null;
  const links = new Set<string>();
  if (principal.paymentLinkId) links.add(principal.paymentLinkId);
  const named = ctx.state.body?.payment_link_id;
  if (typeof named === 'string') links.add(named);
  return [`ip:${ctx.ip}`, ...[...links].map((link) => `link:${link}`)];
}

function isDecline(error: unknown): boolean {
  return error instanceof ApiError && error.errorType === 'TransactionDeclined';
}

export function createRateLimiter(limit: RateLimit | null, now: () => number = Date.now) {
  const buckets = limit ? new Buckets(limit) : null;
  const declines = new Declines();
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
      const wait = declines.begin(names, now());
      if (wait > 0) throw tooManyRequests(wait);
      let declined = false;
      try {
        await next();
      } catch (error) {
        declined = isDecline(error);
        throw error;
      } finally {
        declines.end(names, now(), declined);
      }
    },
  };
}
