/**
 * A reader's query on embedded chdb runs beside a mirror pass's insert (reporting/store.ts: the
 * store's query connection): an insert sent while a long query runs is in before the query answers.
 * On one connection chdb would run them one at a time, in the order they came.
 */
import tap from 'tap';
import { loadConfig } from '../api/config.ts';
import { openStore } from '../reporting/store.ts';
import { tempDataDir } from './reporting-support.ts';

const t = tap;
const config = loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: 'postgres://unused', SETTLE_DATA_DIR: tempDataDir(t) });
const store = openStore(config);
t.teardown(() => store.close());
await store.ensureSchema();

/** A feed line of the document shape (reporting/columns.ts FEED_COLUMNS.data), as a rebuild sends it. */
function line(id: string): string {
  const at = '2026-11-28 10:00:00.000000';
  return JSON.stringify(['org_beside', 'test', id, 'payment', at, at, 1, 0, { amount: '100', status: 'processed' }]);
}

t.test("an insert sent while a reader's query runs is in before the query answers", async (t) => {
  const answered: string[] = [];
  // Four blocks of one row, each held half a second: the query runs for about two seconds.
  const query = store.select<{ s: number }>('SELECT sleepEachRow(0.5) AS s FROM numbers(4) SETTINGS max_block_size = 1')
    .then((rows) => answered.push(`query of ${rows.length} rows`));
  const insert = store.insertLines([line('txn_beside_1'), line('txn_beside_2')]).then(() => answered.push('insert'));
  await Promise.all([query, insert]);
  t.same(answered, ['insert', 'query of 4 rows'], 'the insert did not wait for the query sent before it');
  const [{ n }] = await store.select<{ n: string }>(`SELECT count() AS n FROM ${store.table} FINAL WHERE org_id = 'org_beside'`);
  t.equal(Number(n), 2, 'both rows are in the mirror');
});
