/**
 * The spacing of mirror passes while changes flow (reporting/mirror.ts PASS_SPACING) follows how
 * long a pass's insert into ClickHouse took, not the whole pass: a pass that waited on a Postgres
 * lock holds the next one back no longer than a pass that did not. The idle poll is an hour here,
 * and no query waits on the mirror, so only the spacing after a copying pass brings the next pass.
 */
import t from 'tap';
import { createDb, rows } from '../api/db/connection.ts';
import { covers } from '../reporting/feed.ts';
import { eventually } from './helpers/wait.ts';
import { positionNow, reportingFirst } from './reporting-support.ts';

/** How long the test holds a pass on a lock: a spacing by duration would then hold the next pass back as long again. */
const HOLD_MS = 15_000;

const { databaseUrl, reporting } = await reportingFirst(t, { REPORTING_POLL_INTERVAL: '3600000' });
const db = createDb(databaseUrl, 3);
t.teardown(() => db.destroy());
await rows(db, "insert into orgs (id, name) values ('org_spacing', 'Spacing')");
const mirror = reporting.running.mirror()!;
let made = 0;

/** Commits one payment; the position a reader would then ask for. */
async function pay() {
  made += 1;
  await rows(db, `insert into transactions (id, org_id, environment, type, data)
    values (?, 'org_spacing', 'test', 'payment', '{"amount": 100, "status": "processed"}')`, [`txn_spacing${String(made).padStart(13, '0')}`]);
  return positionNow(db);
}

/** Whether a pass is waiting for the lock on the table it reads first (its snapshot is taken by then). */
async function passBlocked(): Promise<boolean> {
  const [{ n }] = await rows<{ n: number }>(db, `select count(*)::int as n from pg_stat_activity
    where datname = current_database() and wait_event_type = 'Lock' and query like '%pg_current_snapshot()%'`);
  return n > 0;
}

t.test('a pass that waited on a lock does not hold back the next one: a payment after it is mirrored without an idle poll', async (t) => {
  // A pass that starts between the lock and the payment reads a snapshot without it (it copies nothing): tried again.
  for (let attempt = 1; attempt <= 5; attempt += 1) {
    const blocker = await db.transaction();
    await blocker.raw('lock table reporting_pruned in access exclusive mode');
    const before = await pay();
    t.ok(await eventually(passBlocked, Boolean, 30_000, 25), 'a pass waits on the lock');
    await new Promise((resolve) => setTimeout(resolve, HOLD_MS));
    const released = Date.now();
    await blocker.rollback();
    const after = await pay();
    const copied = await eventually(() => mirror.status, (s) => covers(s.position, before), 60_000, 25);
    t.ok(covers(copied.position, before), 'the payment made while the pass waited is mirrored');
    if (!copied.lastCopy || copied.lastCopy.startedAt >= released) {
      t.comment(`attempt ${attempt}: the held pass did not copy the payment; again (last copy ${JSON.stringify(copied.lastCopy)}, released at ${released})`);
      continue;
    }
    const reached = await eventually(() => mirror.status.position, (p) => covers(p, after), HOLD_MS / 2, 25);
    t.ok(covers(reached, after), 'the payment made right after is mirrored within half the hold, with the idle poll an hour');
    return;
  }
  t.fail('no attempt held a copying pass');
});
