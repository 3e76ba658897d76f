/**
 * Under a flow of inserts the mirror table deletes its outdated parts every second (MIRROR_SETTINGS
 * in reporting/store.ts), not hundreds at once every 15–40 s beside the inserts.
 */
import t from 'tap';
import { loadConfig } from '../api/config.ts';
import { openStore } from '../reporting/store.ts';
import { tempDataDir } from './reporting-support.ts';

const store = openStore(loadConfig({ LOG_LEVEL: 'silent', SETTLE_DATA_DIR: tempDataDir(t) }));
t.teardown(() => store.close());
await store.ensureSchema();

let made = 0;
/** A pass's worth of feed lines (the `data` shape). */
function lines(count: number): string[] {
  return Array.from({ length: count }, () => {
    made += 1;
    const at = new Date(Date.now() - 60_000 + made).toISOString().replace('T', ' ').replace('Z', '');
    return JSON.stringify(['org_cleanup', 'test', `txn_cleanup${String(made).padStart(9, '0')}`, 'payment', at, at, 1, 0, { amount: String(made), status: 'processed' }]);
  });
}

t.test('a flow of small inserts has its outdated parts deleted as it goes, not gathered', async (t) => {
  const started = Date.now();
  let inserts = 0;
  let mostOutdated = 0;
  while (Date.now() - started < 8_000) {
    await store.insertLines(lines(30));
    inserts += 1;
    const [parts] = await store.select<{ outdated: string }>(
      `SELECT toString(countIf(parts.active = 0)) AS outdated FROM system.parts AS parts WHERE database = {database:String} AND table = 'transactions'`,
      { database: store.database });
    mostOutdated = Math.max(mostOutdated, Number(parts.outdated));
  }
  t.ok(inserts > 50, `${inserts} inserts`);
  // Every insert's part is outdated once merged: gathered, nearly all of them are outdated by the end.
  t.ok(mostOutdated < inserts / 2, `at most ${mostOutdated} outdated parts at once over ${inserts} inserts`);
});
