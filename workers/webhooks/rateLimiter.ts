/**
 * Per-endpoint rate limits (`rate_limit`, deliveries per second) across every worker process: a
 * delivery of a limited webhook takes a slot from the webhook's schedule in PostgreSQL
 * (rateSlots.ts) before its attempt is opened, so waiting is never an attempt and nothing fails
 * or is dropped. A slot due within `leadMs` is waited for here; a later one is held by the
 * delivery's job, deferred to come back `leadMs` before it (the worker finds due jobs every poll
 * interval), then waited for to the millisecond. A job that comes back past its slot by more than
 * one interval (its worker died, its org had no room) takes a new one, so a late slot never adds
 * a delivery to a second that already has its share.
 */
import type { Db } from '../../api/db/connection.ts';
import type { DeliveryJob } from '../../api/families/webhooks/deliveryJobs.ts';
import { rateLimitOf, takeRateSlot } from './rateSlots.ts';

/** A webhook's limit is read again after this long, so a change reaches running workers within it. */
const LIMIT_FRESH_MS = 1000;
const LIMITS_KEPT = 10_000;

/** The delivery goes later: its job comes back at `runAt`, holding the slot at `slotMs` (the database's clock). */
export interface RateDeferral {
  runAt: Date;
  slotMs: number;
}

export class RateLimiter {
  /** each webhook's limit as last read, or being read: concurrent deliveries of one webhook share one read */
  private readonly limits = new Map<string, { perSecond: Promise<number | null>; readAt: number }>();
  /** the database's clock minus this process's, as last seen */
  private offsetMs = 0;
  private readonly db: Db;
  private readonly leadMs: number;

  constructor(db: Db, leadMs: number) {
    this.db = db;
    this.leadMs = leadMs;
  }

  private async limitOf(webhookId: string): Promise<number | null> {
    const known = this.limits.get(webhookId);
    if (known && Date.now() - known.readAt < LIMIT_FRESH_MS) return known.perSecond;
    const perSecond = rateLimitOf(this.db, webhookId);
    if (this.limits.size >= LIMITS_KEPT) this.limits.clear();
    const reading = { perSecond, readAt: Date.now() };
    this.limits.set(webhookId, reading);
    // A failed read is not kept: the next delivery reads again.
    perSecond.catch(() => this.limits.get(webhookId) === reading && this.limits.delete(webhookId));
    return perSecond;
  }

  /** Null when the delivery may go now (after waiting here for its slot, if it has a limit); otherwise when to come back. */
  async admit(job: DeliveryJob): Promise<RateDeferral | null> {
    const perSecond = await this.limitOf(job.webhook_id);
    if (perSecond === null) return null;
    const intervalMs = 1000 / perSecond;
    let slotMs = job.rate_slot_ms;
    let nowMs = Date.now() + this.offsetMs;
    if (slotMs === undefined || nowMs - slotMs > intervalMs) {
      const taken = await takeRateSlot(this.db, job.webhook_id, perSecond);
      this.offsetMs = taken.nowMs - Date.now();
      ({ slotMs, nowMs } = taken);
    }
    const waitMs = slotMs - nowMs;
    if (waitMs > this.leadMs) return { runAt: new Date(slotMs - this.leadMs - this.offsetMs), slotMs };
    if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
    return null;
  }
}
