/**
 * What a test may replace in a process (immich's injectable seams): the clock, the random source,
 * the payment processor and the outbound HTTP client. `startWeb` and `startWorker` take the same
 * `Seams`, so one test can pin time or a processor's answers for both processes it runs.
 * Production passes none: every seam falls back to the real thing.
 */
import { pooledRandomBytes } from './randomPool.ts';
import type { IncomingHttpHeaders } from 'node:http';
import type { LookupFunction } from 'node:net';
import type { PaymentProcessor } from './processor.ts';
import { sandboxProcessor } from './families/transactions/sandbox.ts';

/** Random bytes, as `crypto.randomBytes` gives them: ids, client tokens and key secrets draw from it. */
export type RandomSource = (bytes: number) => Buffer;

export interface OutboundRequest {
  method: 'POST' | 'GET';
  headers: Record<string, string>;
  body?: string;
  /** the lookup of the tenant asking (workers/webhooks/dnsLookup.ts); the agents check what it answers */
  dnsLookup?: LookupFunction;
}

export interface BoundedAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  /** the first bytes of the answer's body, at most the bound */
  body: Buffer;
  /** the rest of the body was not read: past the bound, or broken off after the status */
  cut: boolean;
}

/**
 * The worker's outbound HTTP client (webhook deliveries, OAuth token requests); the real one is
 * `createOutbound` in workers/webhooks/outbound.ts. Declared here so both processes' seams are
 * one type and `api/` imports nothing from `workers/`.
 */
export interface Outbound {
  /**
   * Sends a request and reads its answer up to `limit` bytes; past that the connection is closed.
   * Once the status has arrived, a body that breaks off or times out still makes an answer.
   */
  request(url: string, request: OutboundRequest, limit: number): Promise<BoundedAnswer>;
}

export interface Seams {
  /**
   * The domain's clock: timed rules, rate limiting, the worker's timed runs (funding, chargebacks,
   * link expiry, verification, billing day), delivery timestamps and OAuth token lifetimes.
   * Default: the machine's clock. Rows' created_at and job run times stay on the database's clock.
   */
  clock: () => Date;
  /** Default: `crypto.randomBytes`, drawn from a pool (`pooledRandomBytes`). */
  random: RandomSource;
  /** Decides cards and which bank debits bounce. Default: the sandbox (CONTRACT §7). */
  processor: PaymentProcessor;
  /**
   * Default: none here; the worker builds its SSRF-guarded client from config
   * (WEBHOOK_ALLOW_PRIVATE, WEBHOOK_TIMEOUT) when this is absent.
   */
  outbound?: Outbound;
}

export const systemClock = (): Date => new Date();

/** The seams a caller gave, the real ones for the rest. */
export function withDefaults(given: Partial<Seams> = {}): Seams {
  return {
    clock: given.clock ?? systemClock,
    random: given.random ?? pooledRandomBytes,
    processor: given.processor ?? sandboxProcessor,
    outbound: given.outbound,
  };
}
