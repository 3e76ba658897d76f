/**
 * Unit tier: the tenant gate (api/tenantGate.ts) over locks kept in memory, with leases ended
 * by the test. What it promises: the requests of one tenant share a hold (one lock round trip per
 * lease), a hold is given back only when its lease is over and its last request has left, no new
 * hold is given while a reset of the tenant waits or runs, and other tenants never wait for it.
 */
import t from 'tap';
import type { Tenant } from '../../api/engine/family.ts';
import type { SharedHold } from '../../api/db/tenantLocks.ts';
import { TenantGate, type TenantLocks } from '../../api/tenantGate.ts';

const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };

/** Locks as Postgres would keep them for one session, with a reset that can be made pending. */
function memoryLocks() {
  const held = new Map<string, number>();
  let resetting: { tenant: string; done: Promise<void>; finish: () => void } | null = null;
  const locks = {
    tries: 0,
    held: (tenant: Tenant) => held.get(tenant.orgId) ?? 0,
    lostAll: false,
    startReset(tenant: Tenant) {
      let finish!: () => void;
      const done = new Promise<void>((resolve) => (finish = resolve));
      resetting = { tenant: tenant.orgId, done, finish };
    },
    finishReset() {
      resetting?.finish();
      resetting = null;
    },
    async tryShare(tenant: Tenant): Promise<SharedHold | null> {
      locks.tries += 1;
      if (resetting?.tenant === tenant.orgId) return null;
      held.set(tenant.orgId, locks.held(tenant) + 1);
      let released = false;
      return {
        get lost() {
          return locks.lostAll;
        },
        release() {
          if (released) return;
          released = true;
          held.set(tenant.orgId, locks.held(tenant) - 1);
        },
      };
    },
    async awaitReset(tenant: Tenant): Promise<void> {
      if (resetting?.tenant === tenant.orgId) await resetting.done;
    },
  };
  return locks satisfies TenantLocks & Record<string, unknown>;
}

function manualLeases() {
  const ends: Array<() => void> = [];
  return { start: (end: () => void) => void ends.push(end), endAll: () => ends.splice(0).forEach((end) => end()) };
}

/** Whether a promise has settled, after everything already queued has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true), () => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

t.test('requests of one tenant in one lease share one hold: one lock round trip', async (t) => {
  const locks = memoryLocks();
  const gate = new TenantGate(locks, manualLeases().start);
  const leaves = await Promise.all([gate.enter(acme), gate.enter(acme), gate.enter(acme)]);
  leaves.push(await gate.enter(acme));
  t.equal(locks.tries, 1, 'taken once');
  t.equal(locks.held(acme), 1);
  leaves.forEach((leave) => leave());
  t.equal(locks.held(acme), 1, 'kept while its lease lasts, ready for the next request');
});

t.test('a hold is given back once its lease is over and its last request has left', async (t) => {
  const locks = memoryLocks();
  const leases = manualLeases();
  const gate = new TenantGate(locks, leases.start);
  const first = await gate.enter(acme);
  const second = await gate.enter(acme);
  leases.endAll();
  first();
  t.equal(locks.held(acme), 1, 'a request still runs under it');
  const next = await gate.enter(acme);
  t.equal(locks.tries, 2, 'a request after the lease takes a new hold');
  t.equal(locks.held(acme), 2);
  second();
  second();
  t.equal(locks.held(acme), 1, 'the old hold is given back when its last request leaves (once)');
  next();
  leases.endAll();
  t.equal(locks.held(acme), 0, 'an idle hold is given back when its lease ends');
});

t.test('while a reset of the tenant waits or runs, its requests wait; other tenants do not', async (t) => {
  const locks = memoryLocks();
  const leases = manualLeases();
  const gate = new TenantGate(locks, leases.start);
  const running = await gate.enter(acme);
  leases.endAll();
  locks.startReset(acme);
  const waiting = gate.enter(acme);
  const alsoWaiting = gate.enter(acme);
  t.notOk(await settled(waiting), 'a new request of the tenant waits for the reset');
  const other = await gate.enter(globex);
  t.equal(locks.held(globex), 1, 'another tenant is let in at once');
  other();
  running();
  t.equal(locks.held(acme), 0, 'the running request left: the reset may take the lock');
  locks.finishReset();
  const [leave, alsoLeave] = await Promise.all([waiting, alsoWaiting]);
  t.equal(locks.held(acme), 1, 'after the reset, the waiting requests share a new hold');
  leave();
  alsoLeave();
});

t.test('a hold whose connection was lost is not joined', async (t) => {
  const locks = memoryLocks();
  const gate = new TenantGate(locks, manualLeases().start);
  const before = await gate.enter(acme);
  locks.lostAll = true;
  const after = gate.enter(acme);
  locks.lostAll = false;
  await after;
  t.equal(locks.tries, 2, 'a new hold is taken');
  before();
});

/** Leases ended and renewed by the test, oldest first. */
function renewableLeases() {
  const leases: Array<{ end: () => void; renew: () => void }> = [];
  return {
    start: (end: () => void, renew: () => void) => void leases.push({ end, renew }),
    renewOldest: () => leases[0]!.renew(),
    endOldest: () => leases.shift()!.end(),
  };
}

/** Locks whose shares are granted only when the test says, as a round trip that takes its time. */
function slowLocks() {
  const locks = memoryLocks();
  const pending: Array<() => void> = [];
  const grantNow = locks.tryShare;
  return Object.assign(locks, {
    grantAll: () => pending.splice(0).forEach((grant) => grant()),
    tryShare: (tenant: Tenant) => new Promise<SharedHold | null>((resolve) => pending.push(() => resolve(grantNow(tenant)))),
  });
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

t.test('under steady traffic the next hold is taken before the lease ends: requests never wait for the lock', async (t) => {
  const locks = slowLocks();
  const leases = renewableLeases();
  const gate = new TenantGate(locks, leases.start);
  const entering = gate.enter(acme);
  locks.grantAll();
  const first = await entering;
  leases.renewOldest();
  locks.grantAll();
  await turn();
  t.equal(locks.tries, 2, 'the hold that requests joined is renewed during its lease');
  leases.endOldest();
  const after = gate.enter(acme);
  t.ok(await settled(after), 'a request arriving as the lease ends joins the renewed hold at once');
  t.equal(locks.tries, 2, 'no lock round trip for it');
  first();
  t.equal(locks.held(acme), 1, 'the renewed hold is given back once its lease is over and its last request has left');
  (await after)();
});

t.test('a renewal is refused while a reset waits, and a hold nobody joined is not renewed', async (t) => {
  const locks = memoryLocks();
  const leases = renewableLeases();
  const gate = new TenantGate(locks, leases.start);
  (await gate.enter(acme))();
  locks.startReset(acme);
  leases.renewOldest();
  await turn();
  t.equal(locks.held(acme), 1, 'no new share while a reset waits');
  leases.endOldest();
  t.equal(locks.held(acme), 0, 'the lease ends and its idle hold is given back: the reset may run');
  const waiting = gate.enter(acme);
  t.notOk(await settled(waiting), 'a request waits for the reset');
  locks.finishReset();
  (await waiting)();
  t.equal(locks.held(acme), 1, 'after the reset the request joins the hold taken for the renewal');
  leases.renewOldest();
  await turn();
  t.equal(locks.tries, 4, 'that hold, joined, is renewed (the refused try and the one after the reset were the second and third)');
  leases.endOldest();
  leases.renewOldest();
  await turn();
  t.equal(locks.tries, 4, 'the renewed hold, joined by nobody, is not');
  leases.endOldest();
  t.equal(locks.held(acme), 0, 'and is given back at its lease end');
});
