/**
 * Upgrading to migration 20261209001000: logs written before it, when the index by webhook was an
 * expression over `data`, are found by their webhook after it (the generated column is filled as
 * the table is rewritten), and a second run changes nothing.
 */
import t from 'tap';
import { createKnex } from '../api/db/admin.ts';
import { down, up } from '../migrations/20261209001000_webhook_logs_heap_only_answers.ts';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);

t.test('logs made before the upgrade are listed by their webhook after it, and the table keeps room for answers', async (t) => {
  const created = await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: 'https://example.com/hook' } });
  t.equal(created.status, 200);
  const webhook = created.body.id as string;
  const row = await api.db('webhooks').where({ id: webhook }).first();
  const knex = createKnex(api.databaseUrl);
  t.teardown(() => knex.destroy());
  await down(knex);
  // As an attempt's opening wrote them then: the webhook inside `data` only.
  await api.db.raw(
    `insert into webhook_logs (id, org_id, environment, data, created_at)
     select 'whl_upgrade' || g, ?, ?, jsonb_build_object('webhook_id', ?::text, 'event_id', 'evt_' || g, 'attempt', 1, 'status', 'delivered', 'http_status', 200), now() - make_interval(secs => 10 - g)
       from generate_series(1, 3) g`,
    [row.org_id, row.environment, webhook]);
  await up(knex);
  await up(knex);

  const listed = await api.request('GET', `/webhooks/${webhook}/logs`);
  t.equal(listed.status, 200);
  t.same(listed.body.values.map((log: { id: string }) => log.id), ['whl_upgrade3', 'whl_upgrade2', 'whl_upgrade1'], 'newest first, by the generated column');
  const filtered = await api.request('GET', `/webhook_logs?q=${encodeURIComponent(`webhook_id == "${webhook}"`)}`);
  t.equal(filtered.body.values.length, 3, 'a list filtered by webhook finds them too');
  const indexes = (await api.db.raw("select indexname from pg_indexes where tablename = 'webhook_logs' order by indexname")).rows.map((r: { indexname: string }) => r.indexname);
  t.ok(indexes.includes('webhook_logs_by_webhook'), 'the index by the column');
  t.notOk(indexes.includes('webhook_logs_webhook'), 'the expression index is gone');
  const [{ reloptions }] = (await api.db.raw("select reloptions from pg_class where relname = 'webhook_logs'")).rows;
  t.same(reloptions, ['fillfactor=40']);
});
