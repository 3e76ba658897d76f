/**
 * Delivery jobs enqueued together take turns by org (api/families/webhooks/deliveryJobs.ts): one
 * org's burst does not stand in front of another org's single delivery, the jobs keep the order
 * they were given, and retries and deferrals queue behind first attempts; a deferred delivery
 * brought forward while its org's receivers are not slow goes ahead of them.
 */
import pg from 'pg';
import t from 'tap';
import { createDb, rows } from '../api/db/connection.ts';
import { deliveryJobs, LATER_ATTEMPT_PRIORITY, type DeliveryJob } from '../api/families/webhooks/deliveryJobs.ts';
import { deferDelivery, wakeDeferredDelivery } from '../workers/webhooks/deferrals.ts';
import { freshDatabase } from './helpers/db.ts';
import { eventually } from './helpers/wait.ts';

const databaseUrl = await freshDatabase(t);
const db = createDb(databaseUrl, 2);
t.teardown(() => db.destroy());

async function enqueued(prefix: string): Promise<Array<{ key: string; priority: number }>> {
  return rows(db, `select key, priority from graphile_worker.jobs where key like ? order by priority, run_at, id`, [`deliver:${prefix}%`]);
}

t.test('a burst of one org and another org\'s one delivery: the single one runs among the burst\'s first four', async (t) => {
  // Nine deliveries of org_b, then one of org_a, in that order.
  await rows(db, `select ${deliveryJobs(`(select 'turn' || lpad(g::text, 2, '0') as id, json_build_object('org_id', case when g <= 9 then 'org_b' else 'org_a' end) as payload
      from generate_series(1, 10) g order by g) source`)}`, []);
  const jobs = await enqueued('turn');
  t.same(jobs.map((j) => j.priority), [0, 0, 0, 0, 0, 1, 1, 1, 1, 2]);
  t.same(jobs.map((j) => j.key.slice(-2)), ['01', '02', '03', '04', '10', '05', '06', '07', '08', '09'], 'taken in this order: org_a after org_b\'s first four, not after all nine');
});

t.test('retries and deferrals queue behind first attempts', async (t) => {
  await rows(db, `select ${deliveryJobs(`(select 'later1' as id, json_build_object('org_id', 'org_c') as payload) source`, 'now()', true)}`, []);
  t.same(await enqueued('later'), [{ key: 'deliver:later1', priority: LATER_ATTEMPT_PRIORITY }]);
});

t.test('a deferred delivery brought forward while its org\'s receivers are not slow runs before the org\'s deliveries made after it; brought forward for a slow org, it stays behind them', async (t) => {
  const deferred = async (id: string) => {
    // Its event made a second ago, before the org's next deliveries below.
    const job = { delivery_id: id, org_id: 'org_d', environment: 'test', event_created_at: new Date(Date.now() - 1000).toISOString() } as DeliveryJob;
    const jobId = await deferDelivery(db, job, new Date(Date.now() + 60_000));
    t.ok(jobId, 'deferred: a job due later');
    return jobId!;
  };
  const answering = await deferred('wake1');
  const slow = await deferred('wake2');
  // The org's next deliveries, dispatched while the two wait.
  await rows(db, `select ${deliveryJobs(`(select 'wake' || (g + 2)::text as id, json_build_object('org_id', 'org_d') as payload from generate_series(1, 6) g order by g) source`)}`, []);
  t.equal(await wakeDeferredDelivery(db, answering, true), true);
  t.equal(await wakeDeferredDelivery(db, slow, false), true);
  const order = (await enqueued('wake')).map((j) => j.key.slice('deliver:'.length));
  t.equal(order[0], 'wake1', 'the delivery of the org that answers is taken first');
  t.equal(order.at(-1), 'wake2', 'the slow org\'s is taken after every first attempt');
});

t.test('a deferred delivery brought forward is announced to idle workers as a new job, not left to their next poll', async (t) => {
  const listener = new pg.Client({ connectionString: databaseUrl });
  await listener.connect();
  t.teardown(() => listener.end());
  const told: string[] = [];
  listener.on('notification', (message) => told.push(message.channel));
  await listener.query('listen "jobs:insert"');
  const job = { delivery_id: 'told1', org_id: 'org_e', environment: 'test' } as DeliveryJob;
  const jobId = await deferDelivery(db, job, new Date(Date.now() + 60_000));
  await eventually(async () => told.length, (n) => n === 1, 5000);
  t.equal(await wakeDeferredDelivery(db, jobId!), true);
  t.equal(await eventually(async () => told.length, (n) => n === 2, 5000), 2, 'told once when deferred, once when brought forward');
});
