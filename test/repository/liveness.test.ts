/**
 * Repository tier: worker liveness (workers/liveness.ts) against a real database, each test in a
 * transaction rolled back at its end. `now()` is the transaction's start, so silence is made by
 * moving times back.
 */
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import { forgetWorkers, heartbeat, releaseDeadWorkers } from '../../workers/liveness.ts';
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
