/**
 * A test environment's work and its reset (`DELETE /test_data`) never overlap: every request of
 * the environment (api/http/testDataRoutes.ts), and every worker job about it (workers/main.ts),
 * runs while its process holds a share of the tenant's `requests` lock (api/db/tenantLocks.ts),
 * and a reset takes that lock exclusively. So a request or a job runs wholly before a reset (which
 * then deletes what it wrote) or wholly after it (and sees the empty environment): a payment can
 * never read a customer, wait out the reset, and store a payment that names a deleted customer,
 * and neither can an automatic payment of the billing run.
 *
 * Live environments are never reset, so their work passes without a hold.
 *
 * Requests do not each take the lock: the requests of one tenant in this process join one hold
 * for a lease (LEASE_MS; one round trip per tenant per lease, every other request pays a counter).
 * A hold that requests joined is renewed before its lease ends (RENEW_MS): the next hold is taken
 * in the background and new requests join it once it is granted, so a tenant under steady traffic
 * never has its requests wait for the lock's round trip (taken when the lease ends, the next hold
 * would hold up every request arriving meanwhile, five times a second). A tenant that went quiet takes no new hold: the
 * first request after its lease ends takes one. A hold is given back once its lease has ended
 * and its last request has finished. A reset refuses new holds, renewals included, as soon as it
 * starts, so it waits at most one lease plus the longest request already running; requests
 * arriving meanwhile wait for the reset to commit, then take a new hold.
 */
import type { Db } from './db/connection.ts';
import { awaitTenantReset, TenantLockSession, type SharedHold } from './db/tenantLocks.ts';
import type { Tenant } from './engine/family.ts';

export interface TenantLocks {
  /** a share of the tenant's lock, or null while a reset of the tenant waits or runs */
  tryShare(tenant: Tenant): Promise<SharedHold | null>;
  /** resolves once no reset of the tenant waits or runs */
  awaitReset(tenant: Tenant): Promise<void>;
}

interface Hold {
  share: SharedHold;
  /** requests running under it */
  uses: number;
  /** its lease has ended: no new request joins it */
  ended: boolean;
  /** requests that joined it: a hold nobody joined is not renewed */
  joined: number;
}

/** How long requests of one tenant join the same hold. */
export const LEASE_MS = 200;
/** When into its lease a hold that requests joined is renewed: the round trip has the rest of the lease. */
export const RENEW_MS = 150;

/**
 * Starts a hold's lease: `end` is called once it is over, `renew` before that, when the next hold
 * may be taken (a test ends and renews leases itself).
 */
export type LeaseTimer = (end: () => void, renew: () => void) => void;

const leaseTimer: LeaseTimer = (end, renew) => {
  setTimeout(renew, RENEW_MS).unref();
  setTimeout(end, LEASE_MS).unref();
};

export class TenantGate {
  readonly #locks: TenantLocks;
  readonly #startLease: LeaseTimer;
  /** the hold new requests of each tenant join */
  readonly #current = new Map<string, Hold>();
  /** a hold being taken, shared by the requests that arrive meanwhile */
  readonly #taking = new Map<string, Promise<Hold>>();

  constructor(locks: TenantLocks, startLease: LeaseTimer = leaseTimer) {
    this.#locks = locks;
    this.#startLease = startLease;
  }

  /** Runs `work` under a share of a test tenant's lock (at once for a live one). */
  async around<T>(tenant: Tenant, work: () => Promise<T>): Promise<T> {
    if (tenant.environment !== 'test') return work();
    const leave = await this.enter(tenant);
    try {
      return await work();
    } finally {
      leave();
    }
  }

  /** Waits until the tenant's requests may run; call the answer when this request has finished. */
  async enter(tenant: Tenant): Promise<() => void> {
    const key = `${tenant.orgId}/${tenant.environment}`;
    const current = this.#current.get(key);
    const hold = current && !current.share.lost ? current : await this.#take(key, tenant);
    hold.uses += 1;
    hold.joined += 1;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      hold.uses -= 1;
      if (hold.ended && hold.uses === 0) hold.share.release();
    };
  }

  #take(key: string, tenant: Tenant): Promise<Hold> {
    let taking = this.#taking.get(key);
    if (!taking) {
      taking = this.#newHold(key, tenant).finally(() => this.#taking.delete(key));
      this.#taking.set(key, taking);
    }
    return taking;
  }

  async #newHold(key: string, tenant: Tenant): Promise<Hold> {
    for (;;) {
      const share = await this.#locks.tryShare(tenant);
      if (share) {
        const hold: Hold = { share, uses: 0, ended: false, joined: 0 };
        this.#current.set(key, hold);
        // The requests waiting for this hold join it before its lease can end (they resume as microtasks, before any timer).
        this.#startLease(() => this.#end(key, hold), () => this.#renew(key, tenant, hold));
        return hold;
      }
      await this.#locks.awaitReset(tenant);
    }
  }

  /**
   * Takes the next hold of a tenant whose current one requests joined, while that one still runs:
   * once granted it is the one new requests join, and the renewed hold is given back when its
   * lease is over and its last request has left. A refused renewal (a reset waits or runs) takes
   * its hold once the reset is over, as a request's would.
   */
  #renew(key: string, tenant: Tenant, hold: Hold): void {
    if (this.#current.get(key) !== hold || hold.joined === 0) return;
    this.#take(key, tenant).catch(() => {});
  }

  #end(key: string, hold: Hold): void {
    hold.ended = true;
    if (this.#current.get(key) === hold) this.#current.delete(key);
    if (hold.uses === 0) hold.share.release();
  }
}

/** A process's gate over the database's tenant locks: one dedicated connection holds its shares. */
export function databaseTenantGate(databaseUrl: string, db: Db): { gate: TenantGate; close: () => Promise<void> } {
  const session = new TenantLockSession(databaseUrl);
  const gate = new TenantGate({
    tryShare: (tenant) => session.tryShare(tenant),
    awaitReset: (tenant) => awaitTenantReset(db, tenant),
  });
  return { gate, close: () => session.close() };
}
