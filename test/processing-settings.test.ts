/**
 * `/processing_settings` and `/profiles` (CONTRACT §18): one of each per processing account, in
 * both versions, read-only, following the account's settings, tenant-scoped.
 */
import t from 'tap';
import { objectByIdSql } from '../api/db/objects.ts';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);
const V2 = { version: 'v2' };

t.test('each processing account has one profile naming its processing settings, in both versions', async (t) => {
  const account = (await api.request('POST', '/processing_accounts', { json: { name: 'Settled', funding_style: 'gross', funding_delay: 4, descriptor: 'SETTLED' } })).body;
  t.match(account.processing_settings_id, /^ps_/);
  const profiles = await api.request('GET', '/profiles', V2);
  t.equal(profiles.status, 200, JSON.stringify(profiles.body));
  const profile = profiles.body.values.find((p: any) => p.account_id === account.id);
  t.match(profile, { object: 'profile', id: /^prof_/, name: 'Settled', processing_settings_id: account.processing_settings_id });
  t.equal(profiles.body.values.filter((p: any) => p.account_id === account.id).length, 1, 'exactly one');
  const v2 = await api.request('GET', `/processing_settings/${account.processing_settings_id}`, V2);
  t.equal(v2.status, 200, JSON.stringify(v2.body));
  t.match(v2.body, { object: 'processing_settings', account_id: account.id, funding: { style: 'gross', delay: 4, default_descriptor: 'SETTLED' } });
  const v1 = await api.request('GET', `/processing_settings/${account.processing_settings_id}`);
  t.match(v1.body, { object: 'processing_settings', processing_id: account.id, funding_style: 'gross', funding_delay: 4, descriptor: 'SETTLED' });
  t.equal((await api.request('GET', `/profiles/${profile.id}`)).body.processing_settings_id, account.processing_settings_id, 'v1 reads profiles too');
});

t.test('processing settings follow the account and change only through it', async (t) => {
  const account = (await api.request('POST', '/accounts', { ...V2, json: { type: 'processing', name: 'Mover' } })).body;
  const settingsId = account.processing.settings_id;
  await api.request('PUT', `/accounts/${account.id}`, { ...V2, json: { processing: { settings: { funding: { style: 'itemized' } } } } });
  t.equal((await api.request('GET', `/processing_settings/${settingsId}`, V2)).body.funding.style, 'itemized');
  const filtered = await api.request('GET', '/processing_settings?funding_style=net');
  t.ok(filtered.body.values.every((s: any) => s.funding_style === 'net'), 'filters work as on any collection');
  for (const [method, path] of [['POST', '/processing_settings'], ['PUT', `/processing_settings/${settingsId}`], ['DELETE', `/processing_settings/${settingsId}`], ['POST', '/profiles']]) {
    const res = await api.request(method, path, { ...V2, json: { funding: { style: 'gross' } } });
    t.equal(res.status, 400, `${method} ${path} is read-only`);
  }
  t.equal((await api.request('PUT', `/accounts/${account.id}`, { ...V2, json: { processing: { settings_id: 'ps_other' } } })).status, 400, 'the settings id is the account\'s own');
});

t.test('a new processing account may copy the settings of an existing one by id', async (t) => {
  const template = (await api.request('POST', '/accounts', { ...V2, json: { type: 'processing', name: 'Template', processing: { default_category: 'retail', settings: { funding: { style: 'manual', delay: 7 } } } } })).body;
  const copy = await api.request('POST', '/accounts', { ...V2, json: { type: 'processing', name: 'Copy', processing: { settings_id: template.processing.settings_id } } });
  t.equal(copy.status, 200, JSON.stringify(copy.body));
  t.match(copy.body.processing, { settings: { funding: { style: 'manual', delay: 7 } }, default_category: 'retail' });
  t.not(copy.body.processing.settings_id, template.processing.settings_id, 'the copy has settings of its own');
  for (const bad of ['ps_missing', 'acct_x', 42]) {
    const res = await api.request('POST', '/accounts', { ...V2, json: { type: 'processing', name: 'Bad', processing: { settings_id: bad } } });
    t.equal(res.status, 400, `settings_id ${bad}`);
    t.match(res.body.details, { processing: { settings_id: String } });
  }
});

t.test('another tenant sees none of them', async (t) => {
  const account = (await api.request('POST', '/processing_accounts', { json: { name: 'Private' } })).body;
  const other = await api.newKey('other-org', 'live');
  t.equal((await api.request('GET', `/processing_settings/${account.processing_settings_id}`, { key: other })).status, 404);
  t.same((await api.request('GET', '/profiles', { ...V2, key: other })).body.values, [], 'a live environment starts with no processing account');
  const copy = await api.request('POST', '/processing_accounts', { key: other, json: { name: 'Thief', processing_settings_id: account.processing_settings_id } });
  t.equal(copy.status, 400, 'nor copies them');
});

t.test('a lookup by settings or profile id is an index lookup on accounts', async (t) => {
  for (const [table, id] of [['processing_settings', 'ps_abc'], ['profiles', 'prof_abc']]) {
    const sql = objectByIdSql(table, { orgId: 'org_x', environment: 'test' }, id);
    // The test database's accounts are a handful of rows, where a scan is cheapest once analysed:
    // with scans priced out, the plan shows whether an index serves the lookup at all.
    const plan = await api.db.transaction(async (tx) => {
      await tx.raw('set local enable_seqscan = off');
      return JSON.stringify((await tx.raw(`explain (format json) ${sql.sql}`, sql.bindings as never[])).rows[0]['QUERY PLAN']);
    });
    t.match(plan, /accounts_by_(settings|profile)_id/, `${table}: ${plan.slice(0, 200)}`);
  }
});
