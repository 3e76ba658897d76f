/**
 * A backlog of an org whose receiver answers fills the org's room for companions (the deliveries
 * running jobs take along) with a few jobs' worth; a job that starts while that room is taken
 * waits for it to come back and then takes its share along, rather than delivering its own event
 * alone and handing its job slot back for the next job of the same backlog (a graphile-worker
 * fetch and completion per delivery). The receiver answers each request after ANSWER_MS, within
 * what counts as answering, so the room stays taken for a while at a time. Every delivery is
 * still made once, by its first attempt.
 */
import t from 'tap';
import { deliveryJobs } from '../api/metrics.ts';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

/** More than the org's room for companions in one process (tenantSlots.ts COMPANIONS_MAX, 200), twice over. */
const EVENTS = 450;
/** The receiver's time to answer each request: under RESPONSIVE_MS (200), so the org's receivers answer. */
const ANSWER_MS = 100;

async function jobsAlone(): Promise<number> {
  return (await deliveryJobs.get()).values.filter((v) => v.labels.companions === 'no_room').reduce((sum, v) => sum + v.value, 0);
}

t.test('jobs of a backlog wait for their org\'s room for companions instead of running alone', { timeout: 300_000 }, async (t) => {
  const api = await startTestApi(t);
  const receiver = await startReceiver(t);
  receiver.answerAfterMs = ANSWER_MS;
  const url = `${receiver.url}/hook`;
  t.equal((await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url } })).status, 200);
  // Committed before any worker runs: the worker dispatches and delivers them as one backlog.
  for (let i = 0; i < EVENTS; i++) t.equal((await api.request('POST', '/processing_accounts', { json: { name: `Backlog ${i}` } })).status, 200);

  const aloneBefore = await jobsAlone();
  await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  const delivered = await eventually(async () => Number((await api.db.raw(`select count(*) as n from webhook_deliveries where state = 'delivered'`)).rows[0].n),
    (n) => n === EVENTS, 240_000);
  t.equal(delivered, EVENTS, 'every delivery delivered');
  const receipts = receiver.received.map((r) => String(r.headers['x-service-event-id']));
  t.equal(new Set(receipts).size, EVENTS, 'every event reached the receiver');
  t.equal(receipts.length, EVENTS, 'none twice');
  const deliveries = await api.db('webhook_deliveries').select('state', 'attempts');
  t.same(new Set(deliveries.map((d: { state: string; attempts: number }) => `${d.state}:${d.attempts}`)), new Set(['delivered:1']), 'each delivered by its first attempt');
  t.equal(await jobsAlone() - aloneBefore, 0, 'no job ran alone for want of room for companions');
});
