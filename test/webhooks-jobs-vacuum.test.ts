/**
 * The job table's upkeep in a delivery worker (workers/webhooks/deliver.ts, JobTableUpkeep): after
 * every so many delivery jobs run, the worker vacuums graphile-worker's job table, one vacuum at a
 * time, so a backlog's job fetches do not walk the dead entries of every job taken since
 * autovacuum last came.
 */
import t from 'tap';
import { JobTableUpkeep } from '../workers/webhooks/deliver.ts';
import { repositoryDatabase } from './helpers/rollback.ts';

const db = await repositoryDatabase(t);

async function vacuums(): Promise<number> {
  const found = await db.raw(`select vacuum_count from pg_stat_all_tables where schemaname = 'graphile_worker' and relname = '_private_jobs'`);
  return Number(found.rows[0].vacuum_count);
}

t.test('the job table is vacuumed once every `every` jobs run, one vacuum at a time', async (t) => {
  const upkeep = new JobTableUpkeep(db, 3);
  const before = await vacuums();
  upkeep.jobDone();
  upkeep.jobDone();
  await upkeep.settled();
  t.equal(await vacuums() - before, 0, 'not before the third job');
  for (let job = 0; job < 4; job++) upkeep.jobDone();
  await upkeep.settled();
  t.equal(await vacuums() - before, 1, 'one vacuum, however many jobs ran while it went on');
  upkeep.jobDone();
  await upkeep.settled();
  t.equal(await vacuums() - before, 2, 'the next once it ended and jobs kept running');
});
