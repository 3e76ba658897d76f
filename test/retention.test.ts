/**
 * Retention, run by the real worker process code as its scheduled `retention` task: idempotency
 * records, webhook delivery logs and dispatched events past their keeping time are deleted, in
 * bounded batches until none is left; young rows, undispatched events and events with a pending
 * delivery stay. Running it again, or twice at once, is harmless.
 */
import t, { type Test } from 'tap';
import { loadConfig } from '../api/config.ts';
import { createDb, rows } from '../api/db/connection.ts';
import { RETENTION_BATCH } from '../api/db/retention.ts';
import { applyRetention, retentionCrontab } from '../workers/tasks/retention.ts';
import { startTestWorker } from './helpers/api.ts';
import { freshDatabase } from './helpers/db.ts';
import { eventually } from './helpers/wait.ts';

const databaseUrl = await freshDatabase(t);
const db = createDb(databaseUrl, 4);
t.teardown(() => db.destroy());
const policyEnv = { SETTLE_EVENT_RETENTION: '2d', WEBHOOK_LOG_RETENTION: '3d' };
// This worker does not dispatch, so the event seeded as undispatched stays so. Its schedule is
// registered but fires only on 1 January: at the default (every 10 minutes) a run of its own could
// fire mid-test and take a share of the rows the two concurrent runs below are counted on.
await startTestWorker(t, databaseUrl, { WORKER_POLL_INTERVAL: '100', WEBHOOK_DISPATCH_POLL: '0', SETTLE_RETENTION_SCHEDULE: '0 0 1 1 *', ...policyEnv });

const OLD_LOGS = RETENTION_BATCH * 2 + 500;

async function seed(): Promise<void> {
  await rows(db, `insert into idempotency_keys (org_id, environment, key, request_hash, state, response_status, response_body, created_at) values
    ('org_r', 'test', 'done-25h', 'h', 'done', 200, '{}', now() - interval '25 hours'),
    ('org_r', 'test', 'running-25h', 'h', 'running', null, null, now() - interval '25 hours'),
    ('org_r', 'test', 'done-23h', 'h', 'done', 200, '{}', now() - interval '23 hours')`);
  await rows(db, `insert into webhooks (id, org_id, environment, data) values
    ('wh_retention', 'org_r', 'test', '{"trigger": "payment", "status": "active", "url": "https://example.com/hook"}')`);
  await rows(db, `insert into events (id, org_id, environment, trigger, object_type, object_id, value, created_at) values
    ('evt_old_dispatched', 'org_r', 'test', 'payment', 'transaction', 'txn_1', '{}', now() - interval '3 days'),
    ('evt_old_delivered', 'org_r', 'test', 'payment', 'transaction', 'txn_2', '{}', now() - interval '3 days'),
    ('evt_old_pending', 'org_r', 'test', 'payment', 'transaction', 'txn_3', '{}', now() - interval '3 days'),
    ('evt_young', 'org_r', 'test', 'payment', 'transaction', 'txn_5', '{}', now() - interval '1 day')`);
  // The dispatcher's position moves past those four (as a dispatch pass would), not past the next one.
  await rows(db, `update webhook_dispatch_position set dispatched = pg_current_snapshot(), window_snapshot = null, window_after_txid = null, window_after_seq = null`);
  await rows(db, `insert into events (id, org_id, environment, trigger, object_type, object_id, value, created_at) values
    ('evt_old_undispatched', 'org_r', 'test', 'payment', 'transaction', 'txn_4', '{}', now() - interval '3 days')`);
  await rows(db, `insert into webhook_deliveries (id, org_id, environment, webhook_id, event_id, series, state, attempts, created_at, finished_at) values
    ('whd_delivered', 'org_r', 'test', 'wh_retention', 'evt_old_delivered', 0, 'delivered', 1, now() - interval '3 days', now() - interval '3 days'),
    ('whd_failed', 'org_r', 'test', 'wh_retention', 'evt_old_delivered', 1, 'failed', 8, now() - interval '3 days', now() - interval '2 days'),
    ('whd_pending', 'org_r', 'test', 'wh_retention', 'evt_old_pending', 0, 'pending', 7, now() - interval '3 days', null),
    ('whd_young', 'org_r', 'test', 'wh_retention', 'evt_young', 0, 'delivered', 1, now() - interval '1 day', now() - interval '1 day')`);
  await rows(db, `insert into webhook_logs (id, org_id, environment, data, created_at)
    select 'whl_old_' || g, 'org_r', 'test', jsonb_build_object('webhook_id', 'wh_retention', 'attempt', 1), now() - interval '4 days'
      from generate_series(1, ?) g`, [OLD_LOGS]);
  await rows(db, `insert into webhook_logs (id, org_id, environment, data, created_at) values
    ('whl_young', 'org_r', 'test', '{"webhook_id": "wh_retention"}', now() - interval '2 days')`);
}

async function ids(table: string, key = 'id'): Promise<string[]> {
  return (await rows<{ id: string }>(db, `select ${key} as id from ${table} order by 1`)).map((r) => r.id);
}

async function logCount(): Promise<number> {
  const [{ n }] = await rows<{ n: number }>(db, 'select count(*)::int as n from webhook_logs');
  return n;
}

/** Enqueues the task the way its schedule does and waits for the worker to finish it. */
async function runScheduledTask(): Promise<{ remaining: number; lastError: string | null }> {
  await rows(db, "select graphile_worker.add_job('retention', '{}'::json, job_key => 'retention')");
  const jobs = await eventually(() => rows<{ last_error: string | null }>(db, "select last_error from graphile_worker.jobs where task_identifier = 'retention'"),
    (found) => found.length === 0 || Boolean(found[0].last_error), 20_000, 50);
  return { remaining: jobs.length, lastError: jobs[0]?.last_error ?? null };
}

async function expectRetained(t: Test): Promise<void> {
  t.same(await ids('idempotency_keys', 'key'), ['done-23h'], 'idempotency: records older than 24 h are gone, done or abandoned; a younger one stays');
  t.same(await ids('events'), ['evt_old_pending', 'evt_old_undispatched', 'evt_young'],
    'events: old dispatched ones are gone; a young one, an undispatched one and one with a pending delivery stay');
  t.same(await ids('webhook_deliveries'), ['whd_pending', 'whd_young'], 'deliveries: the finished ones of deleted events went with them; a pending one stays');
  t.same(await ids("webhook_logs where id not like 'whl_old_%'"), ['whl_young'], 'webhook logs: a log younger than its retention stays');
  t.equal(await logCount(), 1, `all ${OLD_LOGS} old logs are gone: more than one batch of ${RETENTION_BATCH}`);
}

t.test('the worker schedules retention and its run deletes expired rows, in batches, keeping what must stay', async (t) => {
  // graphile-worker records its schedules once its cron has started, a moment after the runner.
  const [known] = await eventually(() => rows<{ identifier: string }>(db, "select identifier from graphile_worker._private_known_crontabs where identifier = 'retention'"),
    (found) => found.length > 0, 15_000, 20);
  t.equal(known?.identifier, 'retention', 'the worker registered the retention schedule');
  await seed();
  const run = await runScheduledTask();
  t.same(run, { remaining: 0, lastError: null }, 'the scheduled task ran and completed');
  await expectRetained(t);
});

t.test('running it again changes nothing and succeeds', async (t) => {
  const run = await runScheduledTask();
  t.same(run, { remaining: 0, lastError: null });
  await expectRetained(t);
});

t.test('two runs at once take disjoint rows and both succeed', async (t) => {
  await rows(db, `insert into webhook_logs (id, org_id, environment, data, created_at)
    select 'whl_again_' || g, 'org_r', 'test', '{}', now() - interval '4 days' from generate_series(1, ?) g`, [OLD_LOGS]);
  const policy = loadConfig(policyEnv);
  const [a, b] = await Promise.all([applyRetention(db, policy), applyRetention(db, policy)]);
  t.equal(a.webhook_logs + b.webhook_logs, OLD_LOGS, `every old log deleted once between them (${a.webhook_logs} + ${b.webhook_logs})`);
  await expectRetained(t);
});

t.test('retention settings: defaults, durations and off', async (t) => {
  const defaults = loadConfig({});
  t.same([defaults.idempotencyRetentionMs, defaults.eventRetentionMs, defaults.webhookLogRetentionMs], [24 * 3600_000, 30 * 86_400_000, 30 * 86_400_000], '24 h, 30 d, 30 d');
  t.equal(retentionCrontab(defaults), '*/10 * * * * retention ?max=5&jobKey=retention', 'every 10 minutes, one job at a time');
  const custom = loadConfig({ SETTLE_IDEMPOTENCY_RETENTION: '48h', SETTLE_EVENT_RETENTION: '90d', WEBHOOK_LOG_RETENTION: '7d', SETTLE_RETENTION_SCHEDULE: '15 3 * * *' });
  t.same([custom.idempotencyRetentionMs, custom.eventRetentionMs, custom.webhookLogRetentionMs], [48 * 3600_000, 90 * 86_400_000, 7 * 86_400_000]);
  t.equal(retentionCrontab(custom), '15 3 * * * retention ?max=5&jobKey=retention');
  t.equal(retentionCrontab(loadConfig({ SETTLE_RETENTION_SCHEDULE: 'off' })), '', 'off: not scheduled');
  t.throws(() => loadConfig({ SETTLE_EVENT_RETENTION: 'forever' }), /SETTLE_EVENT_RETENTION/);
  t.throws(() => loadConfig({ SETTLE_RETENTION_SCHEDULE: 'hourly' }), /SETTLE_RETENTION_SCHEDULE/);
});
