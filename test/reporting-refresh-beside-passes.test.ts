/**
 * The rollup's refresh runs beside the mirror's passes (reporting/mirror.ts): while one runs, a
 * payment committed meanwhile is still mirrored, and a reader asking for its own write gets it.
 * The refresh is held here as long as the test needs (its statements run, its end waits): a slow
 * refresh on a busy machine, without timing anything.
 */
import t from 'tap';
import { createDb, rows } from '../api/db/connection.ts';
import { covers, formatSnapshot, type Snapshot } from '../reporting/feed.ts';
import { ReportingStore } from '../reporting/store.ts';
import { TEST_REPORTING_AUTH } from './helpers/api.ts';
import { eventually } from './helpers/wait.ts';
import { positionNow, reportingFirst } from './reporting-support.ts';

const tenant = { orgId: 'org_refresh', environment: 'test' };
let held: Promise<void> | null = null;
let release: () => void = () => {};
let heldRefreshes = 0;
const refreshRollup = ReportingStore.prototype.refreshRollup;
ReportingStore.prototype.refreshRollup = function heldRefresh(this: ReportingStore) {
  const done = refreshRollup.call(this);
  if (!held) return done;
  heldRefreshes += 1;
  const until = held;
  return done.then(() => until);
};
t.teardown(() => {
  release();
  ReportingStore.prototype.refreshRollup = refreshRollup;
});

const { databaseUrl, reporting } = await reportingFirst(t, { REPORTING_WAIT: '20000' });
const db = createDb(databaseUrl, 3);
t.teardown(() => db.destroy());
await rows(db, "insert into orgs (id, name) values ('org_refresh', 'Refresh')");
let made = 0;

async function pay(): Promise<Snapshot> {
  made += 1;
  await rows(db, `insert into transactions (id, org_id, environment, type, data)
    values (?, 'org_refresh', 'test', 'payment', '{"amount": 100, "status": "processed"}')`, [`txn_refresh${String(made).padStart(13, '0')}`]);
  return positionNow(db);
}

/** What the web process asks the reporting process for a reader: the count at the reader's snapshot. */
async function countAt(snapshot: Snapshot): Promise<{ status: number; count?: number }> {
  const res = await fetch(`${reporting.running.url}/query`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...TEST_REPORTING_AUTH },
    body: JSON.stringify({ tenant, version: 'v1', params: [['fields', 'count']], snapshot: formatSnapshot(snapshot) }),
  });
  const body = await res.json() as { values?: Array<{ count: number }> };
  return { status: res.status, count: body.values?.[0]?.count };
}

t.test('a payment committed while the rollup refreshes is mirrored and read at once, before the refresh ends', async (t) => {
  t.same(await countAt(await pay()), { status: 200, count: 1 }, 'a first payment is read');
  held = new Promise((resolve) => (release = resolve));
  // Changes flowing: the rollup's refresh comes due a second after the last one.
  await pay();
  t.ok(await eventually(() => heldRefreshes, (n) => n > 0, 30_000), 'a rollup refresh runs (held)');
  const written = await pay();
  t.same(await countAt(written), { status: 200, count: 3 }, 'the payment made during the refresh is read with the others');
  t.notOk(covers(reporting.running.mirror()!.rollupPosition, written), 'while the refresh that would roll it up is still running');
  held = null;
  release();
  t.ok(await reporting.running.mirror()!.waitFor(await positionNow(db), 30_000), 'the rollup then takes every payment');
  t.same(await countAt(await positionNow(db)), { status: 200, count: 3 }, 'each counted once');
});
