/**
 * A delivery whose receiver answers is sent as soon as its turn in its org comes: never deferred
 * (put off to a later job, seconds away) because its org's attempts ahead of it were slow to be
 * opened in the database. One org, a receiver that answers at once, WEBHOOK_TENANT_CONCURRENCY 1,
 * and the opening of the first attempt held in the database (an uncommitted log row with the key
 * its attempt log takes, as a loaded server holds a commit) well past the time a waiting attempt
 * gives a receiver to answer (RESPONSIVE_MS in workers/webhooks/tenantSlots.ts).
 */
import pg from 'pg';
import t from 'tap';
import { freePort } from '../api/db/embedded.ts';
import { deliveryId } from '../api/families/webhooks/deliveryJobs.ts';
import { attemptLogId } from '../workers/webhooks/deliveries.ts';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

const DELIVERIES = 6;
/**
 * Three times what a waiting attempt gave the attempts ahead of it before it deferred (200 ms).
 * Real time: the hold is a lock in the database and the patience a timer in the worker process,
 * which no clock seam of this process moves.
 */
const OPENING_HELD_MS = 600;

/** The Prometheus sample `name{reason="…"}`, 0 when absent. */
function deferralsOf(text: string, reason: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`settle_webhook_deferrals_total{reason="${reason}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

t.test('deliveries to an answering receiver wait for their org\'s slot instead of being deferred while an opening is slow', { timeout: 60_000 }, async (t) => {
  const api = await startTestApi(t);
  const receiver = await startReceiver(t);
  const hook = await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: `${receiver.url}/hook` } });
  t.equal(hook.status, 200);
  // Committed before any worker runs: nothing dispatches them yet.
  const made: string[] = [];
  for (let i = 0; i < DELIVERIES; i++) {
    const account = await api.request('POST', '/processing_accounts', { json: { name: `Answered ${i}` } });
    t.equal(account.status, 200);
    made.push(account.body.id);
  }

  const holder = new pg.Client({ connectionString: api.databaseUrl });
  await holder.connect();
  t.teardown(() => holder.end());
  await holder.query('begin');
  // The log key of each delivery's first attempt (deliveryId's and attemptLogId's derivations),
  // for the events of the accounts made above (the org's first account's is older than the webhook).
  const held = await holder.query(
    `insert into webhook_logs (id, org_id, environment)
     select ${attemptLogId(deliveryId('w.id', 'e.id', "'0'"), "'1'")}, e.org_id, e.environment
       from events e join webhooks w on w.org_id = e.org_id and w.environment = e.environment and w.id = $1
      where e.trigger = 'processing_status' and e.object_id = any($2::text[])`, [hook.body.id, made]);
  t.equal(held.rowCount, DELIVERIES);

  const metricsPort = await freePort();
  await startTestWorker(t, api.databaseUrl, {
    WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_CONCURRENCY: '8', WEBHOOK_TENANT_CONCURRENCY: '1', WORKER_POLL_INTERVAL: '50',
    WORKER_METRICS_PORT: String(metricsPort), HOST: '127.0.0.1',
  });
  const taken = await eventually(async () => Number((await api.db.raw('select count(*) as n from graphile_worker.jobs where locked_at is not null')).rows[0].n),
    (n) => n === DELIVERIES, 5000);
  t.equal(taken, DELIVERIES, 'the worker holds every delivery: one being opened, the rest waiting for the org\'s slot');
  await new Promise((resolve) => setTimeout(resolve, OPENING_HELD_MS));
  await holder.query('rollback');

  const received = await receiver.waitFor(DELIVERIES, 20_000);
  t.equal(new Set(received.map((r) => r.headers['x-service-event-id'])).size, DELIVERIES, 'every delivery arrived');
  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  t.equal(deferralsOf(metrics, 'no_room'), 0, 'none was deferred');
  const deliveries = await api.db('webhook_deliveries').select('state', 'attempts');
  t.same(new Set(deliveries.map((d: { state: string; attempts: number }) => `${d.state}:${d.attempts}`)), new Set(['delivered:1']));
});
