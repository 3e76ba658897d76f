/**
 * A rebuild's copy goes live merged (reporting/mirror.ts): the copy writes a part a feed chunk, and
 * left so, ClickHouse would merge them all once the first passes insert beside them.
 */
import t from 'tap';
import { createDb, rows } from '../api/db/connection.ts';
import { loadConfig } from '../api/config.ts';
import { createLogger } from '../api/logger.ts';
import { CHUNK_ROWS } from '../reporting/feed.ts';
import { Mirror } from '../reporting/mirror.ts';
import { openStore } from '../reporting/store.ts';
import { freshDatabase } from './helpers/db.ts';
import { positionNow, tempDataDir } from './reporting-support.ts';

const databaseUrl = await freshDatabase(t);
const db = createDb(databaseUrl, 2);
t.teardown(() => db.destroy());
const store = openStore(loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: tempDataDir(t) }));
const mirror = new Mirror(db, store, createLogger('silent', 'reporting'), { pollIntervalMs: 50, batchIntervalMs: 5 });
t.teardown(async () => {
  await mirror.stop();
  await store.close();
});

/** The mirror table's active parts and rows. */
async function parts(): Promise<{ parts: number; rows: number }> {
  const [found] = await store.select<{ parts: string; rows: string }>(
    `SELECT toString(count()) AS parts, toString(sum(rows)) AS rows FROM system.parts WHERE active AND database = {database:String} AND table = {table:String}`,
    { database: store.database, table: store.table.split('.').pop() },
  );
  return { parts: Number(found.parts), rows: Number(found.rows) };
}

t.test('a first start copies more than a feed chunk and goes live with the copy in one part', async (t) => {
  const total = CHUNK_ROWS + 5_000;
  await rows(db, `insert into transactions (id, org_id, environment, type, data)
    select 'txn_parts' || lpad(g::text, 7, '0'), 'org_parts', 'test', 'payment', jsonb_build_object('amount', g, 'status', 'processed')
      from generate_series(1, ?) g`, [total]);
  await mirror.start();
  t.same(await parts(), { parts: 1, rows: total }, `${total} transactions in one part`);
  // The copy's chunks were written compact; the live table writes and merges parts as ClickHouse chooses.
  const [{ ddl }] = await store.select<{ ddl: string }>(`SELECT create_table_query AS ddl FROM system.tables WHERE database = {database:String} AND name = 'transactions'`, { database: store.database });
  t.notMatch(ddl, /_for_wide_part/, 'the live table keeps ClickHouse\'s part layout');
  // And it follows from there.
  await rows(db, `insert into transactions (id, org_id, environment, type, data) values ('txn_parts_after', 'org_parts', 'test', 'payment', '{"amount": 1}')`);
  t.ok(await mirror.waitFor(await positionNow(db), 60_000, { rollup: false }), 'a later transaction mirrored');
  const [{ n }] = await store.select<{ n: string }>(`SELECT toString(count()) AS n FROM ${store.table} FINAL`);
  t.equal(Number(n), total + 1, 'every transaction once');
});
