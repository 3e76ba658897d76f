/**
 * Repository tier: worker liveness (workers/liveness.ts) against a real database, each test in a
 * transaction rolled back at its end. `now()` is the transaction's start, so silence is made by
 * moving times back.
 */
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import { deliveryJobs, type DeliveryJob } from '../../api/families/webhooks/deliveryJobs.ts';
import { forgetWorkers, heartbeat, releaseDeadWorkers } from '../../workers/liveness.ts';
import { takeCompanionJobs } from '../../workers/webhooks/companionJobs.ts';
import { deferDelivery, dropWaitingDeliveryJob } from '../../workers/webhooks/deferrals.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const SILENT_MS = 5000;

async function lockedJob(tx: Db, workerId: string, lockedSecondsAgo: number): Promise<string> {
  const [job] = (await tx.raw("select id::text from graphile_worker.add_job('retention', '{}'::json)")).rows;
  await tx.raw('update graphile_worker._private_jobs set locked_by = ?, locked_at = now() - make_interval(secs => ?) where id = ?::bigint',
    [workerId, lockedSecondsAgo, job.id]);
  return job.id;
}

async function holderOf(tx: Db, jobId: string): Promise<string | null> {
  return (await tx.raw('select locked_by from graphile_worker.jobs where id = ?::bigint', [jobId])).rows[0].locked_by;
}

t.test('a worker silent past the limit is declared dead and its jobs released; one that announced itself keeps its own', async (t) => {
  await withRollback(db, async (tx) => {
    await heartbeat(tx, ['w_alive', 'w_silent']);
    await tx.raw("update worker_heartbeats set seen_at = now() - interval '10 seconds' where worker_id = 'w_silent'");
    const silentJob = await lockedJob(tx, 'w_silent', 10);
    const aliveJob = await lockedJob(tx, 'w_alive', 10);
    t.equal(await releaseDeadWorkers(tx, SILENT_MS), 1);
    t.equal(await holderOf(tx, silentJob), null, 'the silent worker\'s job is free');
    t.equal(await holderOf(tx, aliveJob), 'w_alive', 'the live worker keeps its job');
    t.same((await tx.raw('select worker_id from worker_heartbeats')).rows, [{ worker_id: 'w_alive' }]);
  });
});

t.test('a job holder that never announced itself is released once its lock is old, not before', async (t) => {
  await withRollback(db, async (tx) => {
    const fresh = await lockedJob(tx, 'w_new', 1);
    const old = await lockedJob(tx, 'w_ghost', 10);
    t.equal(await releaseDeadWorkers(tx, SILENT_MS), 1);
    t.equal(await holderOf(tx, old), null);
    t.equal(await holderOf(tx, fresh), 'w_new', 'a worker may take a moment to send its first heartbeat');
  });
});

t.test('a heartbeat renews a worker\'s time', async (t) => {
  await withRollback(db, async (tx) => {
    await heartbeat(tx, ['w_1']);
    await tx.raw("update worker_heartbeats set seen_at = now() - interval '10 seconds'");
    await heartbeat(tx, ['w_1']);
    t.equal(await releaseDeadWorkers(tx, SILENT_MS), 0);
  });
});

t.test('a silent worker that holds no job is forgotten, and no job is counted released', async (t) => {
  await withRollback(db, async (tx) => {
    await heartbeat(tx, ['w_done', 'w_alive']);
    await tx.raw("update worker_heartbeats set seen_at = now() - interval '10 seconds' where worker_id = 'w_done'");
    const aliveJob = await lockedJob(tx, 'w_alive', 10);
    t.equal(await releaseDeadWorkers(tx, SILENT_MS), 0, 'no job released');
    t.same((await tx.raw('select worker_id from worker_heartbeats')).rows, [{ worker_id: 'w_alive' }], 'the silent one is forgotten');
    t.equal(await holderOf(tx, aliveJob), 'w_alive');
  });
});

t.test('a stopping worker takes its ids off the list itself', async (t) => {
  await withRollback(db, async (tx) => {
    await heartbeat(tx, ['w_stopping_pool', 'w_stopping_1', 'w_other']);
    await forgetWorkers(tx, ['w_stopping_pool', 'w_stopping_1']);
    t.same((await tx.raw('select worker_id from worker_heartbeats')).rows, [{ worker_id: 'w_other' }]);
  });
});

/** What the delivery's jobs are: key, whether graphile-worker would take it, its attempts. */
async function deliveryJobsOf(tx: Db, deliveryId: string): Promise<Array<{ key: string | null; available: boolean; run_later: boolean }>> {
  return (await tx.raw(
    `select key, is_available as available, run_at > now() as run_later from graphile_worker._private_jobs
      where payload->>'delivery_id' = ? order by id`, [deliveryId])).rows;
}

t.test('a dead worker\'s delivery job whose delivery was deferred under it is deleted on release; the deferred job stays to deliver', async (t) => {
  await withRollback(db, async (tx) => {
    const job: DeliveryJob = {
      delivery_id: 'whd_superseded', org_id: 'org_1', environment: 'sandbox', webhook_id: 'wh_1', event_id: 'evt_1', trigger: 'processing_status',
      object_type: 'processing_account', object_id: 'pa_1', value: {}, event_created_at: new Date().toISOString(), sequence: 1,
    };
    await tx.raw(`select ${deliveryJobs("(select 'whd_superseded' as id, ?::json as payload) d")}`, [JSON.stringify(job)]);
    // Taken as a worker takes a job (its lock, its attempt), then deferred under it (a watch job, a
    // deferral, a retry: each adds the delivery's key while the job is locked), then the worker dies.
    const [taken] = await takeCompanionJobs(tx, { org: 'org_1', environment: 'sandbox' }, 'w_killed', 1);
    t.ok(taken, 'the delivery job is locked by the worker');
    await deferDelivery(tx, job, new Date(Date.now() + 60_000));
    await tx.raw("update graphile_worker._private_jobs set locked_at = now() - interval '10 seconds' where locked_by = 'w_killed'");
    t.equal(await releaseDeadWorkers(tx, SILENT_MS), 1);
    t.same(await deliveryJobsOf(tx, 'whd_superseded'), [{ key: 'deliver:whd_superseded', available: true, run_later: true }],
      'one job per delivery: the deferred one, to run; the one it superseded is not left behind');
  });
});

t.test('a dead worker\'s watch job dropped under it (its delivery answered) is deleted on release: no job is left for the delivery', async (t) => {
  await withRollback(db, async (tx) => {
    const job = { delivery_id: 'whd_answered', org_id: 'org_1', environment: 'sandbox' };
    await tx.raw(`select ${deliveryJobs("(select 'whd_answered' as id, ?::json as payload) d")}`, [JSON.stringify(job)]);
    t.equal((await takeCompanionJobs(tx, { org: 'org_1', environment: 'sandbox' }, 'w_killed', 1)).length, 1);
    await dropWaitingDeliveryJob(tx, 'whd_answered');
    await tx.raw("update graphile_worker._private_jobs set locked_at = now() - interval '10 seconds' where locked_by = 'w_killed'");
    t.equal(await releaseDeadWorkers(tx, SILENT_MS), 1);
    t.same(await deliveryJobsOf(tx, 'whd_answered'), []);
  });
});

t.test('a dead worker\'s delivery job that was not superseded is released to run again, not deleted', async (t) => {
  await withRollback(db, async (tx) => {
    const job = { delivery_id: 'whd_cut', org_id: 'org_1', environment: 'sandbox' };
    await tx.raw(`select ${deliveryJobs("(select 'whd_cut' as id, ?::json as payload) d")}`, [JSON.stringify(job)]);
    t.equal((await takeCompanionJobs(tx, { org: 'org_1', environment: 'sandbox' }, 'w_killed', 1)).length, 1);
    await tx.raw("update graphile_worker._private_jobs set locked_at = now() - interval '10 seconds' where locked_by = 'w_killed'");
    t.equal(await releaseDeadWorkers(tx, SILENT_MS), 1);
    t.same(await deliveryJobsOf(tx, 'whd_cut'), [{ key: 'deliver:whd_cut', available: true, run_later: false }]);
  });
});
