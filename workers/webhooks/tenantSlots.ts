/**
 * Per-tenant admission of outbound attempts in one worker process. At most `limit` attempts of
 * one org are in flight, so an org whose receivers hang holds that many of the worker's job slots
 * instead of all of them. An attempt over the limit waits briefly while the org's attempts in
 * flight are young (its receivers answer, and a slot is about to free: cheaper than deferring);
 * otherwise the caller defers its delivery (a new job later, see deferDelivery) and records the
 * job here, and each attempt that ends names one such job to bring forward: a deferred delivery
 * runs when its org has room, not when a timer guesses it might. The slots and that list live and
 * die with the process: a dead worker holds no slot another waits for, and the deliveries it
 * deferred come back by their own run_at, seconds away (deliver.ts, DEFER_MAX_MS).
 */

/** How long the org's oldest attempt in flight may have run for a new one to wait for a slot. */
const RESPONSIVE_MS = 200;
/** Deferred jobs remembered per org; beyond this, their own run_at brings them back. */
const DEFERRED_REMEMBERED = 10_000;

export interface TenantSlot {
  /**
   * The attempt's request goes out now (it was being opened in the database): its age, by which a
   * waiting attempt judges the org's receivers, counts from here.
   */
  sending(): void;
  /** Ends the attempt. True when the slot is free now (no waiting attempt took it over). */
  release(): boolean;
}

interface Taken {
  startedAt: number;
}

export class TenantSlots {
  /** attempts of one org in flight at once; 0: no limit */
  readonly limit: number;
  private readonly now: () => number;
  private readonly running = new Map<string, Set<Taken>>();
  private readonly waiting = new Map<string, Array<(slot: TenantSlot | null) => void>>();
  private readonly deferred = new Map<string, Set<string>>();

  constructor(limit: number, now: () => number = () => performance.now()) {
    this.limit = limit;
    this.now = now;
  }

  /** A slot for one attempt of `org`, or null: defer the delivery. `jobId` is the job asking (forgotten as deferred). */
  acquire(org: string, jobId?: string): Promise<TenantSlot | null> {
    if (jobId) this.forget(org, jobId);
    if (this.limit <= 0) return Promise.resolve({ sending: () => {}, release: () => false });
    const running = this.running.get(org);
    if (!running || running.size < this.limit) return Promise.resolve(this.take(org));
    const oldest = Math.min(...[...running].map((taken) => taken.startedAt));
    const patience = RESPONSIVE_MS - (this.now() - oldest);
    if (patience <= 0) return Promise.resolve(null);
    return new Promise((resolve) => {
      const queue = this.waiting.get(org) ?? [];
      this.waiting.set(org, queue);
      const timer = setTimeout(() => {
        const at = queue.indexOf(granted);
        if (at >= 0) queue.splice(at, 1);
        if (queue.length === 0 && this.waiting.get(org) === queue) this.waiting.delete(org);
        resolve(null);
      }, patience);
      const granted = (slot: TenantSlot | null) => {
        clearTimeout(timer);
        resolve(slot);
      };
      queue.push(granted);
    });
  }

  private take(org: string): TenantSlot {
    const running = this.running.get(org) ?? new Set<Taken>();
    this.running.set(org, running);
    const taken: Taken = { startedAt: this.now() };
    running.add(taken);
    let released = false;
    return {
      sending: () => {
        taken.startedAt = this.now();
      },
      release: () => {
        if (released) return false;
        released = true;
        running.delete(taken);
        if (running.size === 0) this.running.delete(org);
        const queue = this.waiting.get(org);
        const next = queue?.shift();
        if (queue?.length === 0) this.waiting.delete(org);
        if (next) {
          next(this.take(org));
          return false;
        }
        return true;
      },
    };
  }

  /** Whether an attempt of `org` would get a slot at once. */
  hasRoom(org: string): boolean {
    return this.limit <= 0 || (this.running.get(org)?.size ?? 0) < this.limit;
  }

  /** A job this process deferred for `org` (oldest first when brought forward). */
  deferredJob(org: string, jobId: string): void {
    const jobs = this.deferred.get(org) ?? new Set<string>();
    this.deferred.set(org, jobs);
    if (jobs.size < DEFERRED_REMEMBERED) jobs.add(jobId);
  }

  /** How many of `org`'s deferred jobs this process remembers: the queue ahead of the next one. */
  deferredCount(org: string): number {
    return this.deferred.get(org)?.size ?? 0;
  }

  /** The oldest deferred job of `org`, forgotten as it is handed out. */
  nextDeferred(org: string): string | undefined {
    const jobs = this.deferred.get(org);
    const first = jobs?.values().next().value;
    if (first !== undefined) this.forget(org, first);
    return first;
  }

  private forget(org: string, jobId: string): void {
    const jobs = this.deferred.get(org);
    if (jobs?.delete(jobId) && jobs.size === 0) this.deferred.delete(org);
  }
}
