/**
 * Accounts stored before entities were rows (free json `entity` / `legal_entity`) are moved to
 * entity and stakeholder rows by migration 20261123000035: numbers sealed, the account keeping
 * only `entity_id`, and both versions showing the entity as for any new account.
 */
import t from 'tap';
import { loadConfig } from '../api/config.ts';
import { createVault, loadVaultSecret } from '../api/vault.ts';
import { createKnex } from '../api/db/admin.ts';
import { up } from '../migrations/20261123000035_inline_entities_to_rows.ts';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);

t.test('legacy inline entities become entity rows with sealed numbers', async (t) => {
  const org = (await api.db('orgs').where({ name: 'acme' }).first()).id;
  const legacy = [
    ['acct_legacyv1aaaaaaaaaaaaaaaa', { name: 'Old V1', processing: { status: 'pending' }, legal_entity: {
      legal_name: 'Old LLC', type: 'LIMITED_LIABILITY_COMPANY', ein: '12-3456789', street_address: '1 Old Rd', start_date: '2015-05-01',
      surprise: { nested: true }, owners: { full_name: 'Olga', ssn: '011-00-0015', ownership: '75' },
    } }],
    ['acct_legacyv2aaaaaaaaaaaaaaaa', { name: 'Old V2', processing: { status: 'pending' }, entity: {
      type: 'individual', legal_name: 'Ivan', tax_id: { value: '987654321' }, address: { city: 'Kyiv' },
    } }],
  ] as const;
  for (const [id, data] of legacy) {
    await api.db.raw(`insert into accounts (id, org_id, environment, type, data) values (?, ?, 'test', 'processing', ?::jsonb)`, [id, org, JSON.stringify(data)]);
  }
  const knex = createKnex(api.databaseUrl);
  try {
    await up(knex);
    await up(knex); // a second run finds nothing left to move
  } finally {
    await knex.destroy();
  }

  const v1 = await api.request('GET', `/processing_accounts/${legacy[0][0]}`);
  t.match(v1.body.legal_entity, {
    object: 'legal_entity', id: /^ent_/, legal_name: 'Old LLC', type: 'LIMITED_LIABILITY_COMPANY', ein: 'xxxxx6789',
    street_address: '1 Old Rd', verification_status: 'unverified', owners: [{ object: 'stakeholder', full_name: 'Olga', ssn: 'xxxxx0015', ownership: 75 }],
  });
  const v2 = await api.request('GET', `/accounts/${legacy[1][0]}`, { version: 'v2' });
  t.match(v2.body.entity, { object: 'entity', type: 'individual', legal_name: 'Ivan', tax_id: { value: 'xxxxx4321' }, address: { city: 'Kyiv' } });

  const stored = await api.db('accounts').whereIn('id', legacy.map(([id]) => id)).orderBy('id');
  t.same(stored.map((a: any) => [a.data.entity, a.data.legal_entity, typeof a.data.entity_id]), [[undefined, undefined, 'string'], [undefined, undefined, 'string']]);
  t.equal(await api.db('entities').count('* as n').then((r: any) => Number(r[0].n)), 2, 'one entity per account, once');
  const entity = await api.db('entities').where({ id: v1.body.legal_entity.id }).first();
  t.notMatch(JSON.stringify(entity.data), '123456789', 'no clear number at rest');
  const config = loadConfig();
  t.equal(createVault(loadVaultSecret(config.vaultKey, config.dataDir)).decrypt(entity.data.tax_id.sealed), '123456789', 'sealed with the vault');
  t.equal(entity.data.surprise, undefined, 'keys the schema never had are dropped');
});
