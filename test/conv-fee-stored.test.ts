/**
 * `conv_fee` is stored as rows show it (migration 20261130004200): 0 on every transaction unless a
 * convenience fee was charged, for rows written before the migration too, so `conv_fee == 0`
 * finds what a list shows as 0. The backfill is not a change anyone made: no audit event, the
 * same `modified_at`.
 */
import t from 'tap';
import { createKnex } from '../api/db/admin.ts';
import { down, up } from '../migrations/20261130004200_conv_fee_stored.ts';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t, { REPORTING_URL: 'off' });
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35' } };
await api.request('POST', '/processing_accounts', { json: { name: 'Shop' } });

const stored = async (id: string) => (await api.db.raw(`select data->'conv_fee' as conv_fee, modified_at from transactions where id = ?`, [id])).rows[0];
const auditCount = async (id: string) => (await api.db.raw(`select count(*)::int as n from audit_events where data->>'object_id' = ?`, [id])).rows[0].n;

t.test('a payment stores conv_fee 0, and q=conv_fee == 0 finds it', async (t) => {
  const paid = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 10, payment_method: CARD, attrs: { run: 'new' } } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  t.equal((await stored(paid.body.id)).conv_fee, 0);
  const found = await api.request('GET', `/transactions?q=${encodeURIComponent('conv_fee == 0')}&attrs[run]=new&fields=id,conv_fee`);
  t.same(found.body.values, [{ id: paid.body.id, conv_fee: 0 }]);
});

t.test('rows stored before the migration get their 0, unaudited and unmodified', async (t) => {
  const knex = createKnex(api.databaseUrl);
  t.teardown(() => knex.destroy());
  await down(knex);
  const old = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 12, payment_method: CARD, attrs: { run: 'old' } } });
  t.equal(old.status, 200, JSON.stringify(old.body));
  // The API sends its 0 now; a row of a writer before the migration had none.
  await api.db.raw(`alter table transactions disable trigger user;
    update transactions set data = data - 'conv_fee' where id = '${old.body.id}';
    alter table transactions enable trigger user`);
  const before = await stored(old.body.id);
  t.equal(before.conv_fee, null, 'nothing stored before the migration');
  const audited = await auditCount(old.body.id);

  await up(knex);
  const after = await stored(old.body.id);
  t.equal(after.conv_fee, 0, 'stored as the row shows it');
  t.same(after.modified_at, before.modified_at, 'modified_at unchanged');
  t.equal(await auditCount(old.body.id), audited, 'no audit event for the backfill');
  const sums = await api.request('GET', `/transactions?fields=count,sum(conv_fee)&q=${encodeURIComponent('conv_fee == 0')}&attrs[run]=old`);
  t.same(sums.body.values, [{ count: 1, 'sum(conv_fee)': 0 }]);

  // A writer that sends no conv_fee (SQL, as the benchmarks grow a tenant) gets the trigger's 0.
  await api.db.raw(`insert into transactions (id, org_id, environment, type, data)
    select id || '_sql', org_id, environment, type, data - 'conv_fee' from transactions where id = ?`, [old.body.id]);
  t.equal((await stored(`${old.body.id}_sql`)).conv_fee, 0, 'and the trigger is back for new rows');
});

t.test('a payment arrives with its conv_fee 0: the default trigger has nothing to add', async (t) => {
  await api.db.raw('alter table transactions disable trigger transactions_conv_fee_default');
  t.teardown(() => api.db.raw('alter table transactions enable trigger transactions_conv_fee_default'));
  const paid = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 16, payment_method: CARD } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  t.equal((await stored(paid.body.id)).conv_fee, 0);
});
