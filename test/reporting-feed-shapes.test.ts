/**
 * The change feed's two shapes (reporting/columns.ts) give the same mirror rows: a rebuild sends
 * each transaction's `data` document and ClickHouse derives the columns from it (their DEFAULTs),
 * a pass sends the values Postgres derived. Documents of every odd kind — numbers as text, money
 * that does not parse, parents and attrs that are not objects, nulls inside attrs, values that are
 * objects or arrays, Unicode and escapes, a document that is no object at all, a deletion — are
 * read both ways into two tables of the mirror's DDL, and every column compared.
 */
import t from 'tap';
import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { createChdbConnection } from 'chdb/connection';
import path from 'node:path';
import { createDb, rows } from '../api/db/connection.ts';
import { MIRROR_COLUMNS, tableDdl } from '../reporting/columns.ts';
import { readChanges } from '../reporting/feed.ts';
import { ReportingStore } from '../reporting/store.ts';
import { freshDatabase } from './helpers/db.ts';
import { tempDataDir } from './reporting-support.ts';

const db = createDb(await freshDatabase(t), 2);
t.teardown(() => db.destroy());
const client = createClient({ connection: createChdbConnection({ path: path.join(tempDataDir(t), 'clickhouse') }), log: { level: ClickHouseLogLevel.OFF } } as Parameters<typeof createClient>[0]);
const store = new ReportingStore(client, 'shapes', true);
t.teardown(() => store.close());
await store.command('CREATE DATABASE IF NOT EXISTS shapes');

const DOCUMENTS: unknown[] = [
  {
    amount: '1234', currency: 'USD', status: 'processed', status_code: 'approved', status_message: 'ok', description: 'caf\u00e9 "quoted" \\ back\nslash \u2603 \ud83d\ude00',
    order_number: 'o-1', descriptor: 'SHOP', customer_id: 'acct_c1', processing_id: 'acct_p1', payment_method_id: 'pm_1', sender: { account_id: 'acct_s', method_id: 'pm_s' },
    receiver: { account_id: 'acct_r', method_id: null }, payment_method_type: 'card', card_brand: 'visa', risk_flag: 'low', fee: 30, conv_fee: '0',
    funding_status: 'pending', funding_date: '2026-01-02', funding_timing: 'standard', funding_delay: 2, payment_link_id: 'pl_1', trigger: 'api',
    attrs: { region: 'eu', tier: 'gold' },
  },
  { amount: 12, fee: 12.5, conv_fee: '-0', order_number: '007', funding_delay: '2.50', status: true, currency: 42, description: { nested: [1, 'two', null, { x: 1.50 }] } },
  { amount: '-007', fee: '99999999999999999999', conv_fee: '1234567890123456789', processing_id: '123456789012345678', funding_delay: '1e400', status_code: [1, 2], descriptor: null },
  { amount: 1e3, fee: ' 12', conv_fee: '12 ', funding_delay: 'abc', customer_id: '', sender: 'acct_flat', receiver: ['acct_list'], attrs: 'not a map' },
  { conv_fee: { value: 5 }, funding_delay: 1.5e-7, sender: { account_id: { deep: true }, method_id: 17 }, receiver: null, attrs: { a: null, b: 1, c: true, d: { e: null }, f: [1, null], g: '', h: 'x\ty' } },
  { funding_delay: '-12', fee: false, attrs: null },
  { funding_delay: '00012.50e+2', attrs: {} },
  { attrs: { d: { e: null }, k: 'v', n: [null] } },
  {},
  [1, 2],
  'a string',
  7,
  null,
  { status: 'to be deleted' },
];

// Documents the API would refuse: only the change feed's triggers fire, the insert trigger with its
// ledger part (replica mode keeps the ledger's balance and key checks off for these rows).
for (const name of ['transactions_inserted', 'reporting_changes_update', 'reporting_changes_delete']) await rows(db, `alter table transactions enable always trigger ${name}`);
function write(sql: string, bindings: unknown[] = []): Promise<unknown> {
  return db.transaction(async (trx) => {
    await rows(trx, 'set local session_replication_role = replica');
    await rows(trx, sql, bindings);
  });
}

t.test('a pass\'s derived values and a rebuild\'s documents give the same rows', async (t) => {
  const accepted: number[] = [];
  for (const [i, document] of DOCUMENTS.entries()) {
    try {
      await write(`insert into transactions (id, org_id, environment, type, data, created_at, modified_at)
        values (?, 'org_shapes', 'test', 'payment', ?::jsonb, timestamptz '2025-03-04 05:06:07.123456+00' + ? * interval '1 minute', now())`, [`txn_shape${i}`, JSON.stringify(document), i]);
      accepted.push(i);
    } catch (error) {
      t.comment(`${i}: ${(error as Error).message}`);
      // The table may refuse a document that is no object: such a row cannot reach the feed.
    }
  }
  t.equal(accepted.length, DOCUMENTS.length, `${accepted.length} documents stored`);
  await write("delete from transactions where id = 'txn_shape1'");
  // The id used again (at its time: the change row keeps the first one's).
  await write(`insert into transactions (id, org_id, environment, type, data, created_at)
    values ('txn_shape1', 'org_shapes', 'test', 'refund', '{"amount": "5"}', timestamptz '2025-03-04 05:07:07.123456+00')`);
  await write(`delete from transactions where id = 'txn_shape${DOCUMENTS.length - 1}'`);

  const tables = { data: 'shapes.by_data', derived: 'shapes.by_derived' } as const;
  for (const table of Object.values(tables)) await store.command(tableDdl(table));
  // From before the first change: every change row is the tail, read as a pass reads it.
  const seen = { data: 0, derived: 0 };
  await readChanges(db, null, async (chunk) => {
    t.equal(chunk.shape, 'data', 'a rebuild reads documents');
    seen.data += chunk.lines.length;
    await store.insertLines(chunk.lines, tables.data, chunk.shape);
  });
  await readChanges(db, { xmin: 1n, xmax: 1n, xip: [] }, async (chunk) => {
    t.equal(chunk.shape, 'derived', 'a pass reads derived values');
    seen.derived += chunk.lines.length;
    await store.insertLines(chunk.lines, tables.derived, chunk.shape);
  });
  t.ok(seen.data > 0 && seen.derived >= seen.data, `${seen.data} rows rebuilt, ${seen.derived} changes passed`);

  // A rebuild writes every row at version 0.
  const columns = MIRROR_COLUMNS.filter((c) => c.name !== 'version').map((c) => `toJSONString(${c.name}) AS ${c.name}`).join(', ');
  const read = (table: string) => store.select<Record<string, string>>(`SELECT ${columns} FROM ${table} FINAL ORDER BY id`);
  const [byData, byDerived] = [await read(tables.data), await read(tables.derived)];
  t.equal(byData.length, accepted.length - 1, 'every stored transaction but the deleted one');
  t.same(byDerived, byData, 'every column of every row alike');
  const first = byDerived.find((row) => row.id === '"txn_shape0"')!;
  t.equal(first.description, JSON.stringify(DOCUMENTS[0] && (DOCUMENTS[0] as { description: string }).description), 'text with escapes and Unicode unchanged');
  t.equal(first.attrs, '{"tier":"gold","region":"eu"}', 'attrs in jsonb\'s key order');
  t.equal(byDerived.find((row) => row.id === '"txn_shape4"')!.attrs, '{"b":"1","c":"true","d":"{\\"e\\": null}","f":"[1, null]","g":"","h":"x\\ty"}', 'null values dropped, others as their text');
});
