/**
 * A delivery job run again while its first run's attempt is still out in the same process (the
 * database went away mid-job, the job runner was replaced and its jobs released, workers/main.ts):
 * the second run waits for the first's answer to be recorded, and then sends nothing, since the
 * delivery is answered. The delivery task runs here directly (the worker's own task list), the
 * same job twice, with the receiver holding its first request until the second run has either
 * opened an attempt of its own or been put off behind the first.
 */
import http from 'node:http';
import t from 'tap';
import { rows } from '../api/db/connection.ts';
import { deferrals } from '../api/metrics.ts';
import { startTestApi } from './helpers/api.ts';
import { deliveryTask, dispatchedDeliveryJobs, webhookReceiver } from './helpers/deliveryTask.ts';
import { eventually } from './helpers/wait.ts';

async function putOffBehindEarlier(): Promise<number> {
  return (await deferrals.get()).values.find((v) => v.labels.reason === 'earlier_attempt')?.value ?? 0;
}

t.test('a delivery job run again while its first attempt awaits its answer sends nothing more once that answer is recorded', async (t) => {
  const api = await startTestApi(t);
  const held: http.ServerResponse[] = [];
  const requests = await webhookReceiver(t, api, (res, number) => {
    if (number === 1) held.push(res);
    else res.writeHead(200).end('ok');
  });
  t.equal((await api.request('POST', '/processing_accounts', { json: { name: 'Only' } })).status, 200);
  const [job] = await dispatchedDeliveryJobs(api.db);
  t.ok(job, 'one delivery job');
  const run = await deliveryTask(t, api.databaseUrl);

  const first = run(job!).then(() => 'completed', (error: Error) => `failed: ${error.message}`);
  t.ok(await eventually(async () => requests(), (n) => n === 1, 30_000, 20), 'the first attempt is out and unanswered');
  const putOffBefore = await putOffBehindEarlier();
  const second = run(job!).then(() => 'completed', (error: Error) => `failed: ${error.message}`);
  // The second run either opens an attempt of its own now or is put off behind the first.
  const opened = async () => (await rows<{ attempts: number }>(api.db, 'select attempts from webhook_deliveries'))[0]!.attempts;
  const decided = await eventually(async () => ({ attempts: await opened(), putOff: (await putOffBehindEarlier()) - putOffBefore }),
    (s) => s.attempts > 1 || s.putOff > 0, 30_000, 20);
  t.same(decided, { attempts: 1, putOff: 1 }, 'the second run waits for the first attempt instead of opening another');
  for (const res of held.splice(0)) res.writeHead(200).end('ok');
  t.equal(await first, 'completed');
  t.equal(await second, 'completed');

  t.ok(await eventually(async () => (await rows<{ state: string }>(api.db, 'select state from webhook_deliveries'))[0]!.state, (s) => s === 'delivered', 30_000, 20),
    'the delivery is recorded delivered');
  t.equal(requests(), 1, 'the receiver got the delivery once');
  const logs = await rows<{ attempt: number; status: string }>(api.db,
    `select (data->>'attempt')::int as attempt, data->>'status' as status from webhook_logs where (data->>'attempt')::int > 0 order by 1`);
  t.same(logs, [{ attempt: 1, status: 'delivered' }], 'one attempt logged, with its answer');
});
