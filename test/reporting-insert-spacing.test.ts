/**
 * The spacing of mirror passes while changes flow follows what inserts into ClickHouse cost now
 * (reporting/mirror.ts INSERT_SAMPLES: the median of the last few), not the last insert alone: an
 * insert held behind a reader's long query on the store (one statement at a time) does not hold
 * the next pass back. The idle poll is an hour here and nothing waits on the mirror after the
 * first payments, so only the spacing after a copying pass brings the next pass.
 */
import t from 'tap';
import { loadConfig } from '../api/config.ts';
import { createDb, rows } from '../api/db/connection.ts';
import { createLogger } from '../api/logger.ts';
import { covers } from '../reporting/feed.ts';
import { Mirror } from '../reporting/mirror.ts';
import { openStore } from '../reporting/store.ts';
import { freshDatabase } from './helpers/db.ts';
import { eventually } from './helpers/wait.ts';
import { paymentsOf, tempDataDir } from './reporting-support.ts';

/** How long the reader's query holds the store: a spacing by the last insert alone would hold the next pass back as long again. */
const HOLD_MS = 15_000;
/** A query of HOLD_MS on the store: one row a block, each sleeping half a second. */
const HOLDING_QUERY = `SELECT sleepEachRow(0.5) FROM numbers(${HOLD_MS / 500}) SETTINGS max_block_size = 1`;

const databaseUrl = await freshDatabase(t);
const db = createDb(databaseUrl, 3);
t.teardown(() => db.destroy());
const store = openStore(loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: tempDataDir(t) }));
const mirror = new Mirror(db, store, createLogger('silent', 'reporting'), { pollIntervalMs: 3_600_000, batchIntervalMs: 25 });
t.teardown(async () => {
  await mirror.stop();
  await store.close();
});
await rows(db, "insert into orgs (id, name) values ('org_spacing', 'Spacing')");
await mirror.start();
const pay = paymentsOf(db, 'org_spacing');

t.test('an insert held behind a long query does not hold back the next pass: a payment after it is mirrored without an idle poll', async (t) => {
  // Copying passes whose inserts cost what inserts usually cost.
  for (let i = 0; i < 4; i += 1) t.ok(await mirror.waitFor(await pay(), 60_000, { rollup: false }), `payment ${i + 1} is mirrored`);
  let heldDone = false;
  const held = store.select(HOLDING_QUERY).then(() => {
    heldDone = true;
  });
  const before = await pay();
  mirror.wake();
  const copied = await eventually(() => mirror.status.position, (p) => covers(p, before), 4 * HOLD_MS, 25);
  t.ok(covers(copied, before), 'the payment made during the query is mirrored');
  t.ok(heldDone, 'its insert waited for the query');
  await held;
  const after = await pay();
  const reached = await eventually(() => mirror.status.position, (p) => covers(p, after), HOLD_MS / 2, 25);
  t.ok(covers(reached, after), 'the payment made right after is mirrored within half the hold, with the idle poll an hour');
});
