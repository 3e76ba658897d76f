/**
 * Repository tier: idempotency records (api/db/idempotency.ts) against a real database, each test
 * in a transaction rolled back at its end. `now()` is the transaction's start, so a record is made
 * old by moving its `created_at` back.
 */
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import { claimKey, completeKey, findKey, releaseKey } from '../../api/db/idempotency.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const acmeLive: Tenant = { orgId: 'org_acme', environment: 'live' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };
const STALE_S = 60;
const RETAIN_S = 86_400;

const claim = (tx: Db, tenant: Tenant, key: string, hash = 'h1') => claimKey(tx, tenant, key, hash, STALE_S, RETAIN_S);

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
    await claim(tx, acme, 'k');
    await completeKey(tx, acme, 'k', 201, { id: 'cus_1' });
    t.match(await findKey(tx, acme, 'k'), { request_hash: 'h1', state: 'done', response_status: 201, response_body: { id: 'cus_1' } });
    t.equal(await findKey(tx, globex, 'k'), null, 'not visible to another org');
    await age(tx, 'k', STALE_S + 1);
    t.equal(await claim(tx, acme, 'k', 'h2'), false, 'a done key does not go stale');
    await age(tx, 'k', RETAIN_S + 1);
    t.equal(await claim(tx, acme, 'k', 'h2'), true, 'past the retention it counts as gone');
    t.match(await findKey(tx, acme, 'k'), { request_hash: 'h2' });
  });
});

t.test('a running claim whose work never committed goes stale and may be taken over', async (t) => {
  await withRollback(db, async (tx) => {
    await claim(tx, acme, 'k');
    await age(tx, 'k', STALE_S - 5);
    t.equal(await claim(tx, acme, 'k', 'h2'), false, 'not yet stale');
    await age(tx, 'k', STALE_S + 1);
    t.equal(await claim(tx, acme, 'k', 'h2'), true, 'stale: taken over');
  });
});

t.test('releasing drops a running claim but never a completed one', async (t) => {
  await withRollback(db, async (tx) => {
    await claim(tx, acme, 'running');
    await releaseKey(tx, acme, 'running');
    t.equal(await findKey(tx, acme, 'running'), null);
    await claim(tx, acme, 'done');
    await completeKey(tx, acme, 'done', 200, {});
    await releaseKey(tx, acme, 'done');
    t.match(await findKey(tx, acme, 'done'), { state: 'done' });
  });
});
