/**
 * Repository tier: a delivery attempt's two statements (workers/webhooks/deliveries.ts) against a
 * real database, each test in a transaction rolled back at its end. An attempt is opened, and
 * logged `in_flight`, before its request goes out; its answer completes the log and moves the
 * delivery on. A crash between the two leaves the attempt `unknown` once the next one opens.
 */
import t from 'tap';
import type { Db } from '../../api/db/connection.ts';
import { recordEvents } from '../../api/db/events.ts';
import type { Tenant } from '../../api/db/tenant.ts';
import { PROCESSING_STATUS_TRIGGER } from '../../api/families/accounts/triggers.ts';
import type { DeliveryJob } from '../../api/families/webhooks/deliveryJobs.ts';
import { openAttempts, recordAttempts, type AttemptAnswer } from '../../workers/webhooks/deliveries.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: Tenant = { orgId: 'org_acme', environment: 'test' };

/** A webhook in `status`, an event and its pending delivery; the job that carries them. */
async function pendingDelivery(tx: Db, status: 'active' | 'disabled'): Promise<DeliveryJob> {
  await tx.raw(`insert into webhooks (id, org_id, environment, data) values ('wh_1', ?, ?, ?::jsonb)`,
    [acme.orgId, acme.environment, JSON.stringify({ trigger: 'processing_status', url: 'https://example.test/hook', status, retries: 8 })]);
  const [eventId] = await recordEvents(tx, acme, [{ trigger: PROCESSING_STATUS_TRIGGER, objectType: 'processing_account', objectId: 'acct_1', value: { status: 'active' } }]);
  await tx.raw(`insert into webhook_deliveries (id, org_id, environment, webhook_id, event_id, next_attempt_at) values ('whd_1', ?, ?, 'wh_1', ?, now())`,
    [acme.orgId, acme.environment, eventId]);
  return {
    delivery_id: 'whd_1', org_id: acme.orgId, environment: acme.environment, webhook_id: 'wh_1', event_id: eventId, trigger: 'processing_status',
    object_type: 'processing_account', object_id: 'acct_1', value: { status: 'active' }, event_created_at: new Date().toISOString(), sequence: 1,
  };
}

const logs = async (tx: Db) =>
  (await tx.raw(`select data->>'attempt' as attempt, data->>'status' as status, data->>'http_status' as http_status from webhook_logs order by (data->>'attempt')::int`)).rows;
const delivery = async (tx: Db) => (await tx.raw(`select state, attempts from webhook_deliveries where id = 'whd_1'`)).rows[0];

function answer(status: 'delivered' | 'failed', httpStatus: number | null, nextAttemptAt: Date | null = null): AttemptAnswer {
  return { status, httpStatus, oauthStatus: null, durationMs: 12, response: null, error: null, nextAttemptAt };
}

t.test('an attempt is logged in flight when it opens, and completed by its answer', async (t) => {
  await withRollback(db, async (tx) => {
    const job = await pendingDelivery(tx, 'active');
    const [opened] = await openAttempts(tx, [job]);
    t.match(opened, { delivery_id: 'whd_1', attempt: 1, webhook: { url: 'https://example.test/hook' } });
    t.same(await logs(tx), [{ attempt: '1', status: 'in_flight', http_status: null }], 'logged before the request goes out');
    await recordAttempts(tx, [{ job, opened, answer: answer('delivered', 200), state: 'delivered' }]);
    t.same(await logs(tx), [{ attempt: '1', status: 'delivered', http_status: '200' }]);
    t.match(await delivery(tx), { state: 'delivered', attempts: 1 });
    t.same(await openAttempts(tx, [job]), [], 'a delivered delivery opens no further attempt');
  });
});

t.test('an attempt whose answer never came is unknown once the next one opens', async (t) => {
  await withRollback(db, async (tx) => {
    const job = await pendingDelivery(tx, 'active');
    await openAttempts(tx, [job]);
    // The sender died here: no answer recorded. The retry opens attempt 2.
    const [retry] = await openAttempts(tx, [job]);
    t.equal(retry.attempt, 2);
    t.same(await logs(tx), [{ attempt: '1', status: 'unknown', http_status: null }, { attempt: '2', status: 'in_flight', http_status: null }]);
  });
});

t.test('a failed attempt with a retry leaves the delivery pending with its next job', async (t) => {
  await withRollback(db, async (tx) => {
    const job = await pendingDelivery(tx, 'active');
    const [opened] = await openAttempts(tx, [job]);
    const next = new Date(Date.now() + 60_000);
    await recordAttempts(tx, [{ job, opened, answer: answer('failed', 500, next), state: 'pending' }]);
    t.match(await delivery(tx), { state: 'pending', attempts: 1 });
    const jobs = (await tx.raw(`select key, run_at from graphile_worker.jobs where task_identifier = 'deliver_webhook'`)).rows;
    t.equal(jobs.length, 1, 'one job for the retry');
    t.equal(new Date(jobs[0].run_at).getTime(), next.getTime(), 'due when the answer said');
  });
});

t.test('a delivery of a disabled webhook is cancelled without an attempt and logged as skipped', async (t) => {
  await withRollback(db, async (tx) => {
    const job = await pendingDelivery(tx, 'disabled');
    t.same(await openAttempts(tx, [job]), [], 'nothing to send');
    t.match(await delivery(tx), { state: 'cancelled', attempts: 0 });
    t.same(await logs(tx), [{ attempt: '0', status: 'skipped', http_status: null }]);
  });
});

t.test('answers complete their logs in place: every update of a log is heap-only, no index entry written', async (t) => {
  await withRollback(db, async (tx) => {
    const first = await pendingDelivery(tx, 'active');
    // A batch as a backlog's: 60 deliveries (resends of the event), opened together and answered together.
    await tx.raw(`insert into webhook_deliveries (id, org_id, environment, webhook_id, event_id, series, next_attempt_at)
                  select 'whd_' || lpad(g::text, 3, '0'), ?, ?, 'wh_1', ?, g, now() from generate_series(2, 60) g`,
      [acme.orgId, acme.environment, first.event_id]);
    const jobs = [first, ...Array.from({ length: 59 }, (_, i) => ({ ...first, delivery_id: `whd_${String(i + 2).padStart(3, '0')}` }))];
    const opened = await openAttempts(tx, jobs);
    t.equal(opened.length, 60);
    const byId = new Map(jobs.map((job) => [job.delivery_id, job]));
    // The transaction's own counts of updated log rows (the other tests' savepoints count in it too).
    const updates = async () => (await tx.raw(`select pg_stat_get_xact_tuples_updated('webhook_logs'::regclass)::int as updated,
                                                      pg_stat_get_xact_tuples_hot_updated('webhook_logs'::regclass)::int as hot`)).rows[0];
    const before = await updates();
    await recordAttempts(tx, opened.map((o) => ({ job: byId.get(o.delivery_id)!, opened: o, answer: answer('delivered', 200), state: 'delivered' as const })));
    const after = await updates();
    t.same({ updated: after.updated - before.updated, hot: after.hot - before.hot }, { updated: 60, hot: 60 });
    t.same((await logs(tx)).map((log: { status: string }) => log.status), Array(60).fill('delivered'));
  });
});
