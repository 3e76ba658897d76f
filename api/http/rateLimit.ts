/** Per-key token bucket (CONTRACT §10): `SETTLE_RATE_LIMIT=<per second>/<burst>`, per web process. */
import type { Context, Next } from 'koa';
import type { RateLimit } from '../config.ts';
import { tooManyRequests } from '../errors.ts';
import type { RequestState } from './state.ts';

interface Bucket {
  tokens: number;
  updated: number;
}

export function createRateLimiter(limit: RateLimit | null, now: () => number = Date.now) {
  const buckets = new Map<string, Bucket>();
  return async function rateLimit(ctx: Context & { state: RequestState }, next: Next): Promise<void> {
    const keyId = ctx.state.key?.id;
    if (limit && keyId) {
      const time = now();
      const bucket = buckets.get(keyId) ?? { tokens: limit.burst, updated: time };
      bucket.tokens = Math.min(limit.burst, bucket.tokens + ((time - bucket.updated) / 1000) * limit.perSecond);
      bucket.updated = time;
      buckets.set(keyId, bucket);
      if (bucket.tokens < 1) throw tooManyRequests(Math.max(1, Math.ceil((1 - bucket.tokens) / limit.perSecond)));
      bucket.tokens -= 1;
    }
    await next();
  };
}
