/**
 * A worker's dispatch claims the new deliveries of an org whose receivers answer for its own
 * process (workers/webhooks/dispatch.ts, DispatchClaim): their jobs are inserted already locked
 * by the process and attempted at once, never waiting in the queue for a job slot to take them.
 * Observed from the database: a trigger notes, for each delivery job inserted, whether it came
 * locked. Every delivery still arrives once and ends delivered after one attempt. And a claimed
 * delivery that cannot start (its tenant's gate fails) is given back, as a job that throws is.
 */
import t from 'tap';
import { loadConfig } from '../api/config.ts';
import { createLogger } from '../api/logger.ts';
import type { TenantGate } from '../api/tenantGate.ts';
import { openVault } from '../api/vaultKeys.ts';
import { workerTasks } from '../workers/main.ts';
import { dispatchEventBatch } from '../workers/webhooks/dispatch.ts';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

const LATER = 20;

t.test('once its receiver answers, an org\'s new deliveries are claimed by the dispatching worker and sent once each', { timeout: 60_000 }, async (t) => {
  const api = await startTestApi(t);
  await api.db.raw(`
    create table inserted_delivery_jobs (key text, locked boolean);
    create function note_inserted_delivery_job() returns trigger language plpgsql as $$
    begin
      insert into inserted_delivery_jobs values (new.key, new.locked_by is not null);
      return new;
    end $$;
    create trigger note_inserted_delivery_job after insert on graphile_worker._private_jobs
      for each row when (new.key like 'deliver:%') execute function note_inserted_delivery_job();`);
  const receiver = await startReceiver(t);
  const hook = await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: `${receiver.url}/hook` } });
  t.equal(hook.status, 200);
  await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50' });

  // The first delivery goes the queue's way (nothing is known of the receiver yet) and is answered.
  const first = await api.request('POST', '/processing_accounts', { json: { name: 'First' } });
  t.equal(first.status, 200);
  await receiver.waitFor(1, 20_000);
  // Then, one after another (each answered before the next: the org answers throughout), more.
  for (let i = 0; i < LATER; i++) {
    const account = await api.request('POST', '/processing_accounts', { json: { name: `Later ${i}` } });
    t.equal(account.status, 200);
    await receiver.waitFor(2 + i, 20_000);
  }

  const received = receiver.received.filter((r) => r.url === '/hook');
  t.equal(received.length, LATER + 1, 'every delivery arrived once');
  t.equal(new Set(received.map((r) => r.headers['x-service-event-id'])).size, LATER + 1, 'no event twice');
  const jobs = (await api.db.raw('select locked, count(*)::int as n from inserted_delivery_jobs group by locked')).rows as Array<{ locked: boolean; n: number }>;
  const claimed = jobs.find((row) => row.locked)?.n ?? 0;
  // Each is claimed while the org's last answer is recent (a second): on a loaded machine a few may wait longer and queue.
  t.ok(claimed > 0, `later deliveries were claimed at dispatch (${claimed} of ${LATER})`);
  t.equal(jobs.reduce((sum, row) => sum + row.n, 0), LATER + 1, 'one job per delivery');
  const states = await eventually(async () => {
    const deliveries = await api.db('webhook_deliveries').select('state', 'attempts');
    return [...new Set(deliveries.map((d: { state: string; attempts: number }) => `${d.state}:${d.attempts}`))];
  }, (found) => found.length === 1 && found[0] === 'delivered:1', 10_000);
  t.same(states, ['delivered:1'], 'each delivered after one attempt');
  const left = await eventually(async () => (await api.db.raw('select count(*)::int as n from graphile_worker.jobs')).rows[0].n as number, (n) => n === 0, 10_000);
  t.equal(left, 0, 'no job left, locked or queued');
});

t.test('a claimed delivery whose tenant gate fails (its database refusing) has its job given back, not left locked by a live process', { timeout: 60_000 }, async (t) => {
  const api = await startTestApi(t);
  const receiver = await startReceiver(t);
  const hook = await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: `${receiver.url}/hook` } });
  t.equal(hook.status, 200);
  // A first delivery queued registers the task (a pass claims nothing before).
  await api.request('POST', '/processing_accounts', { json: { name: 'Queued' } });
  while (!(await dispatchEventBatch(api.db, 100)).caughtUp);
  const account = await api.request('POST', '/processing_accounts', { json: { name: 'Claimed' } });
  t.equal(account.status, 200);
  const org = hook.body.org_id ?? (await api.db('webhooks').where({ id: hook.body.id }).first()).org_id;
  const pass = await dispatchEventBatch(api.db, 100, { lockedBy: 'worker-gated', rooms: [{ org, room: 10 }] });
  t.equal(pass.claimed.length, 1, 'the new delivery is claimed');

  const config = loadConfig({ LOG_LEVEL: 'silent', WEBHOOK_ALLOW_PRIVATE: 'true', DATABASE_URL: api.databaseUrl });
  const refusing = { around: async () => { throw new Error('the gate\'s database refused'); } } as unknown as TenantGate;
  const { claims } = workerTasks(api.db, config, {}, await openVault(config, api.db, createLogger('silent', 'test')), refusing);
  await claims.run(pass.claimed, 'worker-gated');

  const [job] = (await api.db.raw('select locked_by, last_error from graphile_worker._private_jobs where id = ?', [pass.claimed[0].id])).rows;
  t.same(job, { locked_by: null, last_error: 'the gate\'s database refused' }, 'its job is unlocked, to run again later');
  t.equal(receiver.received.length, 0, 'nothing was sent');
});
