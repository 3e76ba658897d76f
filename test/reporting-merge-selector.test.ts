/**
 * The mirror table merges its small parts in wide batches (merge_selector_base, reporting/store.ts):
 * set on a table the mirror creates, on one an earlier process created without it (on opening),
 * and on the table a rebuild swaps in.
 */
import tap from 'tap';
import { loadConfig } from '../api/config.ts';
import { createDb } from '../api/db/connection.ts';
import { createLogger } from '../api/logger.ts';
import { Mirror } from '../reporting/mirror.ts';
import { openStore, type ReportingStore } from '../reporting/store.ts';
import { freshDatabase } from './helpers/db.ts';
import { tempDataDir } from './reporting-support.ts';

const t = tap;
const databaseUrl = await freshDatabase(t);
const db = createDb(databaseUrl, 4);
t.teardown(() => db.destroy());
const config = loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: tempDataDir(t) });
const log = createLogger('silent', 'reporting');

/** The mirror table's merge_selector_base as its definition states it, or null when it states none. */
async function mergeSelectorBase(store: ReportingStore): Promise<string | null> {
  const [row] = await store.select<{ ddl: string }>('SELECT create_table_query AS ddl FROM system.tables WHERE database = {database:String} AND name = {name:String}',
    { database: store.database, name: 'transactions' });
  return /merge_selector_base = (\d+)/.exec(row?.ddl ?? '')?.[1] ?? null;
}

t.test('the mirror table merges in wide batches, whoever created it', async (t) => {
  const store = openStore(config);
  const first = new Mirror(db, store, log, { pollIntervalMs: 50, batchIntervalMs: 20 });
  await first.start();
  t.equal(await mergeSelectorBase(store), '20', 'a table the mirror creates');

  await first.rebuild(() => {});
  t.equal(await mergeSelectorBase(store), '20', 'the table a rebuild swaps in');

  await first.stop();
  // As an earlier release left it: the table's default merge selector.
  await store.command(`ALTER TABLE ${store.table} RESET SETTING merge_selector_base`);
  t.equal(await mergeSelectorBase(store), null, 'the table without the setting');
  const second = new Mirror(db, store, log, { pollIntervalMs: 50, batchIntervalMs: 20 });
  t.teardown(async () => {
    await second.stop();
    await store.close();
  });
  const { reset } = await second.open();
  t.equal(reset, false, 'the table is kept, not rebuilt');
  t.equal(await mergeSelectorBase(store), '20', 'a table found without it gets it on opening');
});
