/**
 * A delivery whose receiver is slow to answer gives its job back after a second (a watch job
 * stands in, workers/webhooks/deliver.ts). When that watch job cannot be made because the
 * database is going away (a failover), the attempt keeps its job and ends with its answer: the
 * org's slot is free again, and its next delivery goes out. The delivery task runs here directly
 * (the worker's own task list) on a connection through a proxy that drops the database meanwhile,
 * with one slot per org, so a slot left taken would hold back every later delivery of the org.
 */
import http from 'node:http';
import t from 'tap';
import { rows } from '../api/db/connection.ts';
import { startTestApi } from './helpers/api.ts';
import { deliveryTask, dispatchedDeliveryJobs, webhookReceiver } from './helpers/deliveryTask.ts';
import { startTcpProxy } from './helpers/tcpProxy.ts';
import { eventually } from './helpers/wait.ts';

t.test('an attempt whose watch job cannot be made during a failover frees its org\'s slot with its answer: the next delivery goes out', async (t) => {
  const api = await startTestApi(t);
  // The first request is held until the test lets it go; the others are answered at once.
  const held: http.ServerResponse[] = [];
  const requests = await webhookReceiver(t, api, (res, number) => {
    if (number === 1) held.push(res);
    else res.writeHead(200).end('ok');
  });
  for (const name of ['First', 'Second']) t.equal((await api.request('POST', '/processing_accounts', { json: { name } })).status, 200);
  const jobs = await dispatchedDeliveryJobs(api.db);
  t.equal(jobs.length, 2, 'one delivery job per event');

  const proxy = await startTcpProxy(t, Number(new URL(api.databaseUrl).port || 5432));
  const run = await deliveryTask(t, proxy.urlThrough(api.databaseUrl), { WEBHOOK_TENANT_CONCURRENCY: '1' });

  const first = run(jobs[0]!).then(() => 'completed', (error: Error) => `failed: ${error.message}`);
  t.ok(await eventually(async () => requests(), (n) => n === 1, 30_000, 20), 'the first attempt is out and unanswered');
  proxy.refuse();
  t.ok(await eventually(async () => proxy.refused(), (n) => n > 0, 30_000, 20), 'past a second unanswered, the attempt asked the database for its watch job, which is going away');
  proxy.accept();
  for (const res of held.splice(0)) res.writeHead(200).end('ok');
  t.equal(await first, 'completed', 'the first job ends with its answer');

  await run(jobs[1]!);
  t.equal(requests(), 2, 'the second delivery went out: the org\'s slot was free again');
  const states = await rows<{ state: string }>(api.db, 'select state from webhook_deliveries order by id');
  t.same(states.map((d) => d.state), ['delivered', 'delivered'], 'both deliveries are recorded delivered');
});
