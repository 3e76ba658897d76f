/**
 * Repository tier: a webhook's signing secrets (api/families/webhooks/repository.ts) against a real
 * database, each test in a transaction rolled back at its end.
 */
import t from 'tap';
import { insertObjects } from '../../api/db/objects.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { rotateSenderSecret } from '../../api/families/webhooks/repository.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const globex: Tenant = { orgId: 'org_globex', environment: 'test' };
const webhook = { id: 'wh_1', type: 'webhook', created_at: new Date(), modified_at: new Date(), data: { url: 'https://example.com/hook', trigger: 'payment', sender_secret_sealed: 'sealed-1' } };

t.test('a rotation keeps the secret in use as the previous one until the overlap ends', async (t) => {
  await withRollback(db, async (tx) => {
    await insertObjects(tx, 'webhooks', acme, [webhook]);
    const until = new Date('2030-01-01T00:00:00.000Z');
    const rotated = await rotateSenderSecret(tx, acme, 'wh_1', 'sealed-2', until);
    t.match(rotated?.data, { sender_secret_sealed: 'sealed-2', previous_secret_sealed: 'sealed-1', previous_secret_expires_at: until.toISOString(), url: 'https://example.com/hook' });
    const again = await rotateSenderSecret(tx, acme, 'wh_1', 'sealed-3', until);
    t.match(again?.data, { sender_secret_sealed: 'sealed-3', previous_secret_sealed: 'sealed-2' }, 'never more than two secrets');
  });
});

t.test('a rotation without an overlap keeps no previous secret', async (t) => {
  await withRollback(db, async (tx) => {
    await insertObjects(tx, 'webhooks', acme, [webhook]);
    const rotated = await rotateSenderSecret(tx, acme, 'wh_1', 'sealed-2', null);
    t.match(rotated?.data, { sender_secret_sealed: 'sealed-2', previous_secret_sealed: null, previous_secret_expires_at: null });
  });
});

t.test('another tenant cannot rotate the webhook', async (t) => {
  await withRollback(db, async (tx) => {
    await insertObjects(tx, 'webhooks', acme, [webhook]);
    t.equal(await rotateSenderSecret(tx, globex, 'wh_1', 'stolen', null), null);
    t.equal((await tx.raw("select data->>'sender_secret_sealed' as s from webhooks where id = 'wh_1'")).rows[0].s, 'sealed-1');
  });
});
