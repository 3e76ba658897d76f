/**
 * A worker process killed (`kill -9`) while deliveries it took along with its jobs are out (an
 * answering org's backlog goes out more requests at a time than the worker has job slots): another
 * worker releases them once the dead one is silent for WORKER_DEAD_AFTER, every event arrives, and
 * the attempts that were out are logged with their outcome unknown, the retry as the next attempt.
 */
import http from 'node:http';
import t from 'tap';
import { startTestApi } from './helpers/api.ts';
import { spawnAnnouncedWorker } from './helpers/processes.ts';
import { eventually } from './helpers/wait.ts';

const EVENTS = 120;
/** WORKER_CONCURRENCY's default: the dead worker's job slots. */
const CONCURRENCY = 10;
/** Requests answered at once (the org's receiver answers) before the receiver holds them. */
const ANSWERED_FIRST = 20;
/** Requests out at the kill: more than the dead worker's job slots. */
const OUT_AT_KILL = CONCURRENCY + 2;
const DEAD_AFTER_MS = 2000;

t.test('a worker killed while deliveries it took along are out: another releases them, every event arrives, the cut attempts logged unknown', { timeout: 180_000 }, async (t) => {
  const api = await startTestApi(t);
  const reached = new Set<string>();
  let received = 0;
  let open = 0;
  let holding = true;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      reached.add(String(req.headers['x-service-event-id']));
      received += 1;
      if (received > ANSWERED_FIRST && holding) {
        open += 1;
        return;
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
  t.equal((await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url } })).status, 200);
  const made: string[] = [];
  for (let i = 0; i < EVENTS; i++) {
    const account = await api.request('POST', '/processing_accounts', { json: { name: `Backlog ${i}` } });
    t.equal(account.status, 200);
    made.push(account.body.id);
  }

  const env = { DATABASE_URL: api.databaseUrl, WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_DEAD_AFTER: `${DEAD_AFTER_MS}ms`, LOG_LEVEL: 'warn' };
  const first = await spawnAnnouncedWorker(t, api.db, env);
  const out = await eventually(async () => open, (n) => n >= OUT_AT_KILL, 60_000, 20);
  t.ok(out >= OUT_AT_KILL, `${out} requests out at once before the kill`);
  const locked = Number((await api.db.raw(`select count(*) as n from graphile_worker.jobs where task_identifier = 'deliver_webhook' and locked_at is not null`)).rows[0].n);
  t.ok(locked > CONCURRENCY, `the worker held ${locked} delivery jobs, more than its ${CONCURRENCY} job slots`);
  first.child.kill('SIGKILL');
  await first.exited;
  holding = false;

  await spawnAnnouncedWorker(t, api.db, env);
  const delivered = await eventually(async () => Number((await api.db.raw(`select count(*) as n from webhook_deliveries where state = 'delivered'`)).rows[0].n),
    (n) => n === EVENTS, 90_000);
  t.equal(delivered, EVENTS, 'every delivery delivered');
  // The events of the accounts made above: the org's first account's is older than the webhook.
  const events = (await api.db('events').where({ trigger: 'processing_status' }).whereIn('object_id', made).select('id')).map((e: { id: string }) => e.id);
  t.equal(events.length, EVENTS);
  t.same(events.filter((id: string) => !reached.has(id)), [], 'every event reached the receiver');
  const statuses = (await api.db.raw(`select data->>'status' as status, count(*)::int as n from webhook_logs group by 1`)).rows as Array<{ status: string; n: number }>;
  const count = (status: string) => statuses.find((s) => s.status === status)?.n ?? 0;
  t.equal(count('in_flight'), 0, 'no attempt is left in flight');
  t.ok(count('unknown') >= OUT_AT_KILL, `the attempts out at the kill are logged unknown (${count('unknown')})`);
  t.equal(count('delivered'), EVENTS, 'one delivered attempt per delivery');
  // A job completes after its answer is recorded (its own statement, batched): on a loaded machine, moments after.
  const left = await eventually(async () => Number((await api.db.raw(`select count(*) as n from graphile_worker.jobs where task_identifier = 'deliver_webhook'`)).rows[0].n),
    (n) => n === 0, 10_000);
  t.equal(left, 0, 'no delivery job is left behind');
});
