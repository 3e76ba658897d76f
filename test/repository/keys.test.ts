/**
 * Repository tier: secret keys (api/db/keys.ts) and client tokens (api/db/accessTokens.ts) against
 * a real database, each test in a transaction rolled back at its end. Both are found by hash only,
 * and only while active.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import { findActiveAccessToken, insertAccessToken } from '../../api/db/accessTokens.ts';
import { expireKey, findActiveKeyByHash, findKeyToRoll, findOrCreateOrg, insertKey, listOrgKeys, revokeKey } from '../../api/db/keys.ts';
import { createKey } from '../../api/keys.ts';
import { createDomainServices } from '../../api/domain.ts';
import { loadConfig } from '../../api/config.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const hash = (secret: string) => createHash('sha256').update(secret).digest();

async function keyOf(tx: Db, id: string, prefix: string, environment = 'test'): Promise<Buffer> {
  const org = await findOrCreateOrg(tx, 'org_acme', 'acme');
  const secret = `sk_${id}`;
  await insertKey(tx, { id, orgId: org.id, environment, hash: hash(secret), prefix, settings: {} });
  return hash(secret);
}

t.test('an org is made once by name', async (t) => {
  await withRollback(db, async (tx) => {
    t.same(await findOrCreateOrg(tx, 'org_a', 'acme'), { id: 'org_a', created: true });
    t.same(await findOrCreateOrg(tx, 'org_b', 'acme'), { id: 'org_a', created: false }, 'the same name answers the first org');
  });
});

t.test('a key is found by its hash with its org, until it is revoked', async (t) => {
  await withRollback(db, async (tx) => {
    const found = await keyOf(tx, 'key_1', 'sk_test_abc');
    t.match(await findActiveKeyByHash(tx, found), { id: 'key_1', org_id: 'org_acme', org_name: 'acme', environment: 'test' });
    t.equal(await findActiveKeyByHash(tx, hash('sk_other')), null, 'another secret finds nothing');
    t.same(await revokeKey(tx, 'sk_test_a'), { matches: 1, revoked: true }, 'revoked by its shown prefix');
    t.equal(await findActiveKeyByHash(tx, found), null, 'a revoked key is not found');
  });
});

t.test('a revoke names one key: a prefix matching several revokes none', async (t) => {
  await withRollback(db, async (tx) => {
    const one = await keyOf(tx, 'key_one', 'sk_test_one');
    const two = await keyOf(tx, 'key_two', 'sk_test_two');
    t.same(await revokeKey(tx, 'sk_test_'), { matches: 2, revoked: false }, 'ambiguous: nothing revoked');
    t.ok(await findActiveKeyByHash(tx, one), 'the first still works');
    t.ok(await findActiveKeyByHash(tx, two), 'the second still works');
    t.same(await revokeKey(tx, 'key_two'), { matches: 1, revoked: true }, 'by its id');
    t.equal(await findActiveKeyByHash(tx, two), null);
    t.ok(await findActiveKeyByHash(tx, one), 'the other untouched');
  });
});

t.test('an expired key is not found; a roll finds exactly one active key by prefix', async (t) => {
  await withRollback(db, async (tx) => {
    const old = await keyOf(tx, 'key_old', 'sk_test_old');
    await keyOf(tx, 'key_two', 'sk_test_two');
    t.same((await findKeyToRoll(tx, 'sk_test_o')).key?.id, 'key_old');
    t.equal((await findKeyToRoll(tx, 'sk_test_')).matches, 2, 'an ambiguous prefix names none');
    t.equal((await findKeyToRoll(tx, 'sk_test_%')).matches, 0, 'a prefix is text, not a LIKE pattern');
    await expireKey(tx, 'key_old', new Date(Date.now() - 1000));
    t.equal(await findActiveKeyByHash(tx, old), null, 'past its expiry');
    t.same((await listOrgKeys(tx, 'org_acme', 'test')).map((k) => k.id).sort(), ['key_old', 'key_two'], 'the org still lists both');
  });
});

t.test('a client token is found by its hash while active and unexpired', async (t) => {
  await withRollback(db, async (tx) => {
    const tenant = { orgId: 'org_acme', environment: 'test' as const };
    const later = new Date(Date.now() + 60_000);
    await insertAccessToken(tx, { hash: hash('ct_1'), prefix: 'ct_', tenant, kind: 'checkout_plugin', intent: { amount: 3 }, expiresAt: later });
    await insertAccessToken(tx, { hash: hash('ct_2'), prefix: 'ct_', tenant, kind: 'none', intent: {}, expiresAt: new Date(Date.now() - 1000) });
    t.match(await findActiveAccessToken(tx, hash('ct_1')), { org_id: 'org_acme', environment: 'test', intent_kind: 'checkout_plugin', intent: { amount: 3 }, uses: 0 });
    t.equal(await findActiveAccessToken(tx, hash('ct_2')), null, 'an expired token is not found');
    await tx.raw("update access_tokens set status = 'used' where token_hash = ?", [hash('ct_1')]);
    t.equal(await findActiveAccessToken(tx, hash('ct_1')), null, 'a token no longer active is not found');
  });
});

t.test('a new org opens with its default processing account made by the account family\'s create, as the system, with its event; a second key makes none', async (t) => {
  const domain = createDomainServices(loadConfig());
  await withRollback(db, async (tx) => {
    const first = await createKey(tx, domain, 'initech', 'live');
    const accounts = (await tx.raw(`select id, environment, type, data from accounts where org_id = ?`, [first.orgId])).rows;
    t.match(accounts, [{ environment: 'test', type: 'processing', data: { name: 'initech', processing: { status: 'active', funding: { style: 'netted', delay: 2 } } } }]);
    const [account] = accounts;
    t.match(account.id, /^acct_/);
    const audits = (await tx.raw(`select data from audit_events where data->>'object_id' = ?`, [account.id])).rows;
    t.match(audits, [{ data: { action: 'create', actor: { type: 'system', name: 'default_processing_account' } } }]);
    const events = (await tx.raw(`select trigger, value from events where object_id = ?`, [account.id])).rows;
    t.match(events, [{ trigger: 'processing_status', value: 'active' }]);
    const second = await createKey(tx, domain, 'initech', 'test');
    t.equal(second.orgId, first.orgId, 'the same org');
    t.equal((await tx.raw(`select count(*)::int as n from accounts where org_id = ?`, [first.orgId])).rows[0].n, 1, 'no second account');
  });
});
