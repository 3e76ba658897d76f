/**
 * Repository tier: idempotency records (api/db/idempotency.ts) against a real database, each test
 * in a transaction rolled back at its end. `now()` is the transaction's start, so a record is made
 * old by moving its `created_at` back, and a lease runs out by moving its `lease_until` back.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import { claimKey, completeKey, findKey, releaseKey, renewClaims } from '../../api/db/idempotency.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const acmeLive: Tenant = { orgId: 'org_acme', environment: 'live' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };
const UNLEASED_S = 60;
const LEASE_S = 5;
const RETAIN_S = 86_400;

const claim = (tx: Db, tenant: Tenant, key: string, hash = 'h1', claimant = randomUUID()) => claimKey(tx, tenant, key, hash, { claimant, seconds: LEASE_S }, RETAIN_S);

async function lapse(tx: Db, key: string, secondsAgo: number): Promise<void> {
  await tx.raw('update idempotency_keys set lease_until = now() - make_interval(secs => ?) where key = ?', [secondsAgo, key]);
}

async function age(tx: Db, key: string, seconds: number): Promise<void> {
  await tx.raw('update idempotency_keys set created_at = now() - make_interval(secs => ?) where key = ?', [seconds, key]);
}

t.test('a key is claimed once per tenant; another org or environment claims the same key for itself', async (t) => {
  await withRollback(db, async (tx) => {
    t.equal(await claim(tx, acme, 'k'), true);
    t.equal(await claim(tx, acme, 'k'), false, 'a second claim of a running key is refused');
    t.equal(await claim(tx, globex, 'k'), true, 'another org');
    t.equal(await claim(tx, acmeLive, 'k'), true, 'the other environment');
  });
});

t.test('a completed key keeps its response and cannot be claimed again until the retention passes', async (t) => {
  await withRollback(db, async (tx) => {
    const mine = randomUUID();
    await claim(tx, acme, 'k', 'h1', mine);
    t.equal(await completeKey(tx, acme, 'k', mine, 201, { id: 'cus_1' }), true, 'its claimant completes it');
    t.match(await findKey(tx, acme, 'k'), { request_hash: 'h1', state: 'done', response_status: 201, response_body: { id: 'cus_1' } });
    t.equal(await findKey(tx, globex, 'k'), null, 'not visible to another org');
    await age(tx, 'k', UNLEASED_S + 1);
    await lapse(tx, 'k', 1);
    t.equal(await claim(tx, acme, 'k', 'h2'), false, 'a done key does not go stale');
    await age(tx, 'k', RETAIN_S + 1);
    t.equal(await claim(tx, acme, 'k', 'h2'), true, 'past the retention it counts as gone');
    t.match(await findKey(tx, acme, 'k'), { request_hash: 'h2' });
  });
});

t.test('a running claim is held while its lease lasts and may be taken over once it ran out, however young', async (t) => {
  await withRollback(db, async (tx) => {
    await claim(tx, acme, 'k');
    t.equal(await claim(tx, acme, 'k', 'h2'), false, 'the lease lasts');
    await lapse(tx, 'k', 1);
    t.equal(await claim(tx, acme, 'k', 'h2'), true, 'the lease ran out: taken over');
    t.match(await findKey(tx, acme, 'k'), { request_hash: 'h2', state: 'running' });
  });
});

t.test('renewing extends the lease of the claimant still holding it, not of one whose claim was taken over', async (t) => {
  await withRollback(db, async (tx) => {
    const first = randomUUID();
    await claim(tx, acme, 'k', 'h1', first);
    await lapse(tx, 'k', 1);
    await renewClaims(tx, [{ tenant: acme, key: 'k', claimant: first }], LEASE_S);
    t.equal(await claim(tx, acme, 'k', 'h2'), false, 'renewed: still held');
    await lapse(tx, 'k', 1);
    const second = randomUUID();
    t.equal(await claim(tx, acme, 'k', 'h2', second), true);
    await lapse(tx, 'k', 1);
    await renewClaims(tx, [{ tenant: acme, key: 'k', claimant: first }], LEASE_S);
    t.equal(await claim(tx, acme, 'k', 'h3'), true, 'the first claimant renews nothing it no longer holds');
  });
});

t.test('only the claimant holding a running claim completes it: one whose claim was taken over stores nothing', async (t) => {
  await withRollback(db, async (tx) => {
    const first = randomUUID();
    await claim(tx, acme, 'k', 'h1', first);
    await lapse(tx, 'k', 1);
    const second = randomUUID();
    t.equal(await claim(tx, acme, 'k', 'h1', second), true, 'taken over');
    t.equal(await completeKey(tx, acme, 'k', first, 200, { id: 'cus_first' }), false, 'the first claimant no longer holds it');
    t.match(await findKey(tx, acme, 'k'), { state: 'running', response_body: null });
    t.equal(await completeKey(tx, acme, 'k', second, 200, { id: 'cus_second' }), true);
    t.equal(await completeKey(tx, acme, 'k', second, 409, {}), false, 'a completed key is not completed again');
    t.match(await findKey(tx, acme, 'k'), { state: 'done', response_status: 200, response_body: { id: 'cus_second' } });
  });
});

t.test('a claim made without a lease goes stale 60 s after it was made', async (t) => {
  await withRollback(db, async (tx) => {
    await claim(tx, acme, 'k');
    await tx.raw('update idempotency_keys set lease_until = null, claimant = null where key = ?', ['k']);
    await age(tx, 'k', UNLEASED_S - 5);
    t.equal(await claim(tx, acme, 'k', 'h2'), false, 'not yet stale');
    await age(tx, 'k', UNLEASED_S + 1);
    t.equal(await claim(tx, acme, 'k', 'h2'), true, 'stale: taken over');
  });
});

t.test('releasing drops a running claim of its own claimant, never a completed one or one taken over', async (t) => {
  await withRollback(db, async (tx) => {
    const mine = randomUUID();
    await claim(tx, acme, 'running', 'h1', mine);
    await releaseKey(tx, acme, 'running', mine);
    t.equal(await findKey(tx, acme, 'running'), null);
    await claim(tx, acme, 'done', 'h1', mine);
    await completeKey(tx, acme, 'done', mine, 200, {});
    await releaseKey(tx, acme, 'done', mine);
    t.match(await findKey(tx, acme, 'done'), { state: 'done' });
    await claim(tx, acme, 'taken', 'h1', mine);
    await lapse(tx, 'taken', 1);
    await claim(tx, acme, 'taken', 'h1');
    await releaseKey(tx, acme, 'taken', mine);
    t.match(await findKey(tx, acme, 'taken'), { state: 'running' }, 'the request that took it over keeps it');
  });
});
