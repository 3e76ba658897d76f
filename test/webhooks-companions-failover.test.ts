/**
 * A delivery job of an org whose receivers answer takes the org's other due delivery jobs along,
 * locked under its worker's id (workers/webhooks/deliver.ts, Companions). When the database goes
 * away while those are out (a failover), a companion whose answer cannot be recorded is given back
 * once the database answers again: a job left locked under the id of a worker that lives on is not
 * released as a dead worker's are. The delivery task runs here directly (the worker's own task
 * list) on a connection through a proxy that drops the database meanwhile.
 */
import http from 'node:http';
import t from 'tap';
import { rows } from '../api/db/connection.ts';
import { startTestApi } from './helpers/api.ts';
import { deliveryTask, dispatchedDeliveryJobs, webhookReceiver } from './helpers/deliveryTask.ts';
import { startTcpProxy } from './helpers/tcpProxy.ts';
import { eventually } from './helpers/wait.ts';

const WORKER_ID = 'worker-lives-on';
/** How long the database stays away once the companion's answer is in. */
const AWAY_MS = 5000;

t.test('a companion delivery whose answer cannot be recorded during a failover has its job given back once the database answers', async (t) => {
  const api = await startTestApi(t);
  const proxy = await startTcpProxy(t, Number(new URL(api.databaseUrl).port || 5432));
  // The first request is answered at once (the org's receivers answer); the next two, the running
  // job's own and its companion's, are answered together once both are in, with the database gone.
  const held: http.ServerResponse[] = [];
  const requests = await webhookReceiver(t, api, (res, number) => {
    if (number === 1) return void res.writeHead(200).end('ok');
    held.push(res);
    if (held.length < 2) return;
    proxy.refuse();
    for (const waiting of held.splice(0)) waiting.writeHead(200).end('ok');
  });
  for (const name of ['First', 'Second', 'Third']) t.equal((await api.request('POST', '/processing_accounts', { json: { name } })).status, 200);
  const jobs = await dispatchedDeliveryJobs(api.db);
  t.equal(jobs.length, 3, 'one delivery job per event');
  const [first, leader, companion] = jobs as [typeof jobs[0], typeof jobs[0], typeof jobs[0]];
  // The leader runs as graphile-worker runs a job it took: locked under the worker's id.
  await rows(api.db, 'update graphile_worker._private_jobs set locked_by = ?, locked_at = now(), attempts = attempts + 1 where id = ?', [WORKER_ID, leader.id]);

  const run = await deliveryTask(t, proxy.urlThrough(api.databaseUrl));

  await run(first, null);
  t.equal(requests(), 1, 'the first delivery was answered');
  const led = run(leader, WORKER_ID).then(() => 'completed', (error: Error) => `failed: ${error.message}`);
  t.equal(await eventually(async () => requests(), (n) => n === 3, 30_000, 20), 3, 'the running job\'s own delivery and its companion went out together');
  await eventually(async () => proxy.refused(), (n) => n > 0, 30_000, 20);
  // The database stays away a while (or until the job has ended), then answers again.
  await Promise.race([led, new Promise((resolve) => setTimeout(resolve, AWAY_MS))]);
  proxy.accept();
  t.match(await led, /^failed: /, 'the running job failed: its own answer could not be recorded (graphile-worker runs it again)');
  const left = await eventually(async () => (await rows<{ locked_by: string | null; last_error: string | null }>(api.db,
    'select locked_by, last_error from graphile_worker._private_jobs where id = ?', [companion.id]))[0], (job) => job?.locked_by === null, 30_000, 100);
  t.equal(left?.locked_by, null, 'the companion\'s job is no longer held under the live worker\'s id');
  t.ok(left?.last_error, 'it failed, to run again');
});
