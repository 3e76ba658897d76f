/**
 * Repository tier: a webhook's signing secrets rotated through the webhook family's update
 * (engine/operations.ts updateNested with the rotation's overlap) against a real database, each
 * test in a transaction rolled back at its end.
 */
import t from 'tap';
import { loadConfig } from '../../api/config.ts';
import { insertObjects, selectObjectById } from '../../api/db/objects.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { createDomainServices } from '../../api/domain.ts';
import type { RuleContext } from '../../api/engine/family.ts';
import { updateNested } from '../../api/engine/operations.ts';
import { webhooks } from '../../api/families/webhooks/family.ts';
import { ROTATION_OVERLAP } from '../../api/families/webhooks/rules.ts';
import type { Db } from '../../api/db/connection.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const domain = createDomainServices(loadConfig());
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };
const webhook = { id: 'wh_1', type: 'webhook', created_at: new Date(), modified_at: new Date(), data: { url: 'https://example.com/hook', trigger: 'payment', sender_secret_sealed: domain.vault.encrypt('whsec_first_secret_one') } };

async function rotate(tx: Db, secret: string, until: string | null) {
  const ctx: RuleContext = { tx, tenant: acme, version: 'v1', principal: { kind: 'secret', keyId: 'key_test', settings: {} }, domain };
  const row = await selectObjectById(tx, 'webhooks', acme, 'wh_1', { forUpdate: true });
  const rotated = await updateNested(ctx, webhooks, row!, { sender_secret: secret }, new Map([[ROTATION_OVERLAP, until]]));
  const open = (sealed: unknown) => (typeof sealed === 'string' ? domain.vault.decrypt(sealed) : sealed);
  return { ...rotated.data, sender_secret: open(rotated.data.sender_secret_sealed), previous_secret: open(rotated.data.previous_secret_sealed) };
}

t.test('a rotation keeps the secret in use as the previous one until the overlap ends, and stores no overlap marker', async (t) => {
  await withRollback(db, async (tx) => {
    await insertObjects(tx, 'webhooks', acme, [webhook]);
    const until = '2030-01-01T00:00:00.000Z';
    const rotated = await rotate(tx, 'whsec_second_secret_two', until);
    t.match(rotated, { sender_secret: 'whsec_second_secret_two', previous_secret: 'whsec_first_secret_one', previous_secret_expires_at: until, url: 'https://example.com/hook' });
    t.notOk(ROTATION_OVERLAP in rotated, 'the overlap is read by the rules, never stored');
    const again = await rotate(tx, 'whsec_third_secret_three', until);
    t.match(again, { sender_secret: 'whsec_third_secret_three', previous_secret: 'whsec_second_secret_two' }, 'never more than two secrets');
  });
});

t.test('a rotation without an overlap keeps no previous secret', async (t) => {
  await withRollback(db, async (tx) => {
    await insertObjects(tx, 'webhooks', acme, [webhook]);
    t.match(await rotate(tx, 'whsec_second_secret_two', null), { sender_secret: 'whsec_second_secret_two', previous_secret_sealed: null, previous_secret_expires_at: null });
  });
});

t.test('the rotation is audited as a change of the secret, its values redacted', async (t) => {
  await withRollback(db, async (tx) => {
    await insertObjects(tx, 'webhooks', acme, [webhook]);
    await rotate(tx, 'whsec_second_secret_two', '2030-01-01T00:00:00.000Z');
    const audits = (await tx.raw(`select data from audit_events where data->>'object_id' = 'wh_1' and data->>'action' = 'update'`)).rows;
    t.equal(audits.length, 1);
    t.notMatch(JSON.stringify(audits), /whsec_/, 'no secret in the history');
  });
});
