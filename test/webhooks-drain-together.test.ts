/**
 * A backlog of an org whose receiver answers goes out many deliveries at a time: a worker with the
 * defaults (WORKER_CONCURRENCY 10) takes more of the org's due deliveries along with each job it
 * runs, so its receiver sees more requests at once than the worker has job slots, where one
 * delivery per job slot kept them to the org's share of those slots. The receiver answers its
 * first requests at once (the org's receivers answer), then holds each request until more than
 * the worker's concurrency are open together (or until HOLD_MAX_MS, so a worker that never gets
 * there ends the test with the count it reached); every delivery is still made once and recorded.
 */
import http from 'node:http';
import t from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { eventually } from './helpers/wait.ts';

const EVENTS = 150;
/** The default WORKER_CONCURRENCY: job slots in the worker. */
const CONCURRENCY = 10;
/** Requests answered at once before the receiver starts holding them. */
const ANSWERED_FIRST = 20;
/** Requests open together the receiver waits for. */
const OPEN_TOGETHER = CONCURRENCY + 2;
/** Past this, held requests are answered anyway (well within WEBHOOK_TIMEOUT's 15 s). */
const HOLD_MAX_MS = 8000;

interface Receipt { eventId: string }

t.test('a backlog to an answering receiver goes out more requests at a time than the worker has job slots', { timeout: 180_000 }, async (t) => {
  const api = await startTestApi(t);
  const receipts: Receipt[] = [];
  let open = 0;
  let mostOpen = 0;
  let holding = false;
  let reached = false;
  const held: Array<() => void> = [];
  const releaseAll = () => held.splice(0).forEach((answer) => answer());
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      receipts.push({ eventId: String(req.headers['x-service-event-id']) });
      open += 1;
      mostOpen = Math.max(mostOpen, open);
      const answer = () => {
        open -= 1;
        res.writeHead(200).end();
      };
      if (receipts.length === ANSWERED_FIRST) {
        holding = true;
        setTimeout(() => {
          holding = false;
          releaseAll();
        }, HOLD_MAX_MS);
      }
      if (!holding || reached) return answer();
      held.push(answer);
      if (open >= OPEN_TOGETHER) {
        reached = true;
        releaseAll();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    releaseAll();
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
  t.equal((await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url } })).status, 200);
  // Committed before any worker runs: the worker dispatches and delivers them as one backlog.
  for (let i = 0; i < EVENTS; i++) t.equal((await api.request('POST', '/processing_accounts', { json: { name: `Backlog ${i}` } })).status, 200);

  await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  const delivered = await eventually(async () => Number((await api.db.raw(`select count(*) as n from webhook_deliveries where state = 'delivered'`)).rows[0].n),
    (n) => n === EVENTS, 120_000);
  t.equal(delivered, EVENTS, 'every delivery delivered');
  t.ok(mostOpen >= OPEN_TOGETHER, `the receiver had ${mostOpen} requests open at once (wanted at least ${OPEN_TOGETHER}, beyond the worker's ${CONCURRENCY} job slots)`);
  t.equal(new Set(receipts.map((r) => r.eventId)).size, EVENTS, 'every event reached the receiver');
  const deliveries = await api.db('webhook_deliveries').select('state', 'attempts');
  t.same(new Set(deliveries.map((d: { state: string; attempts: number }) => `${d.state}:${d.attempts}`)), new Set(['delivered:1']), 'each delivered by its first attempt');
});
