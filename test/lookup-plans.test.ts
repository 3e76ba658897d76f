/**
 * A lookup by id is a primary-key lookup whatever the statistics say: with one tenant grown large
 * and no statistics gathered (the case that used to scan the whole tenant), and after ANALYZE.
 * The SQL explained is the very text the repositories run (objectByIdSql).
 */
import t from 'tap';
import { createDb } from '../api/db/connection.ts';
import { objectByIdSql } from '../api/db/objects.ts';
import type { Tenant } from '../api/engine/family.ts';
import { freshDatabase } from './helpers/db.ts';

const db = createDb(await freshDatabase(t), 2);
t.teardown(() => db.destroy());
const tenant: Tenant = { orgId: 'org_big', environment: 'test' };
const ROWS = 30000;

for (const [table, type] of [['accounts', 'customer'], ['payment_methods', 'card'], ['transactions', 'payment']] as const) {
  await db.raw(`alter table ${table} set (autovacuum_enabled = false)`);
  await db.raw(
    `insert into ${table} (id, org_id, environment, type, data)
     select 'x_' || g, ?, ?, ?, jsonb_build_object('account_id', 'acct_' || (g % 100), 'status', 'processed') from generate_series(1, ?) g`,
    [tenant.orgId, tenant.environment, type, ROWS],
  );
}

async function plan(sql: { sql: string; bindings: unknown[] }): Promise<{ index: string | undefined; text: string }> {
  const result = await db.raw(`explain (format json) ${sql.sql}`, sql.bindings as never[]);
  const text = JSON.stringify(result.rows[0]['QUERY PLAN']);
  return { index: /"Index Name":"([^"]+)"/.exec(text)?.[1], text };
}

for (const stats of ['no statistics', 'after analyze']) {
  t.test(`by-id lookups use the primary key (${stats})`, async (t) => {
    if (stats === 'after analyze') await db.raw('analyze accounts, payment_methods, transactions');
    for (const [table, type] of [['accounts', 'customer'], ['payment_methods', undefined], ['transactions', undefined]] as const) {
      for (const forUpdate of [false, true]) {
        const found = await plan(objectByIdSql(table, tenant, 'x_777', { type, forUpdate }));
        t.equal(found.index, `${table}_pkey`, `${table}${forUpdate ? ' for update' : ''}: ${found.text.slice(0, 200)}`);
      }
    }
  });
}

t.test('executed, the lookup reads one row and filters none of the tenant away', async (t) => {
  const sql = objectByIdSql('accounts', tenant, 'x_777', { type: 'customer' });
  const result = await db.raw(`explain (analyze, format json) ${sql.sql}`, sql.bindings as never[]);
  const root = result.rows[0]['QUERY PLAN'][0];
  t.equal(root.Plan['Actual Rows'], 1);
  const removed = [...JSON.stringify(root).matchAll(/"Rows Removed by Filter":(\d+)/g)].map((m) => Number(m[1]));
  t.same(removed.filter((n) => n > 0), [], 'no rows of the tenant filtered away');
});

/** The SQL a list really runs (captured from the engine), explained: newest first by created_at is the tenant index, not a sort of the tenant. */
t.test('a list ordered newest first by created_at reads the tenant index', async (t) => {
  const { list } = await import('../api/engine/operations.ts');
  const { parseListQuery } = await import('../api/query/listQuery.ts');
  const { collectionByPath } = await import('../api/families/index.ts');
  const { createDomainServices } = await import('../api/domain.ts');
  const { loadConfig } = await import('../api/config.ts');
  await db.raw('analyze transactions');
  let captured: { sql: string; bindings: unknown[] } | null = null;
  const capture = (q: { sql: string; bindings: unknown[] }) => { if (/from transactions/.test(q.sql)) captured ??= q; };
  db.on('query', capture);
  const ctx = {
    tx: db, tenant, version: 'v1' as const, principal: { kind: 'secret' as const, keyId: 'k', settings: {} },
    domain: createDomainServices(loadConfig({ DATABASE_URL: 'postgres://unused' })), collection: collectionByPath.get('transactions')!,
  };
  const answer = await list(ctx, parseListQuery([['order_by', 'desc(created_at)'], ['limit', '26']]));
  db.off('query', capture);
  t.equal(answer.values.length, 26);
  t.ok(captured, 'the list query was seen');
  const found = await plan({ sql: captured!.sql.replace(/\$\d+/g, '?'), bindings: captured!.bindings });
  t.equal(found.index, 'transactions_by_tenant_created', found.text.slice(0, 300));
  t.notMatch(found.text, /"Node Type":"Sort"/, 'no sort of the whole tenant');
});
