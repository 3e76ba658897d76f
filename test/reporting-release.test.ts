/**
 * A reader waiting for its own writes is answered once a pass has put its rows in ClickHouse, even
 * while the pass's own record of its position is still being written (or slow), and the position
 * is recorded after all.
 */
import tap from 'tap';
import { loadConfig } from '../api/config.ts';
import { createDb, rows } from '../api/db/connection.ts';
import { createTestKey } from './helpers/keys.ts';
import { createLogger } from '../api/logger.ts';
import { parseListQuery } from '../api/query/listQuery.ts';
import { covers, formatSnapshot, type Snapshot } from '../reporting/feed.ts';
import { Mirror } from '../reporting/mirror.ts';
import { runReport } from '../reporting/report.ts';
import { openStore } from '../reporting/store.ts';
import { freshDatabase } from './helpers/db.ts';
import { eventually } from './helpers/wait.ts';
import { positionNow, tempDataDir } from './reporting-support.ts';

const t = tap;
const databaseUrl = await freshDatabase(t);
const db = createDb(databaseUrl, 4);
t.teardown(() => db.destroy());
const store = openStore(loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: tempDataDir(t) }));
const mirror = new Mirror(db, store, createLogger('silent', 'reporting'), { pollIntervalMs: 50, batchIntervalMs: 20 });
t.teardown(async () => {
  await mirror.stop();
  await store.close();
});
const { orgId } = await createTestKey(db, 'acme', 'test');
await mirror.start();

// The position's insert waits until the test lets it go.
const recordPosition = store.writePosition.bind(store);
let letRecordGo!: () => void;
const recordHeld = new Promise<void>((resolve) => (letRecordGo = resolve));
const recordsAsked: Snapshot[] = [];
store.writePosition = async (position) => {
  recordsAsked.push(position);
  await recordHeld;
  await recordPosition(position);
};

t.test('a reader gets its own writes while the position is still being recorded', async (t) => {
  await rows(db, `insert into transactions (id, org_id, environment, type, data)
    select 'txn_release' || n, ?, 'test', 'payment', jsonb_build_object('amount', 100 * n) from generate_series(1, 3) n`, [orgId]);
  const target = await positionNow(db);
  t.equal(await mirror.waitFor(target, 5000), true, 'the mirror covers the writes before its position is recorded');
  await eventually(() => recordsAsked.length, (asked) => asked > 0);
  const query = parseListQuery([['fields', 'count,sum(amount)']]);
  const [answer] = await runReport(store, { tenant: { orgId, environment: 'test' }, version: 'v1', query });
  t.same(answer, { count: 3, 'sum(amount)': 6 }, 'the rows are there while the position insert is held');

  letRecordGo();
  const recorded = await eventually(async () => (await store.readState())?.position ?? null,
    (position) => position !== null && recordsAsked.some((asked) => formatSnapshot(asked) === formatSnapshot(position)));
  t.ok(covers(recorded!, target), 'the position is recorded once its insert goes through');
});
