/**
 * A database upgraded from a release whose attempt logs were keyed by a hash alone ('whl_' and 24
 * hex digits of md5(delivery:attempt)) may hold the log of an attempt whose sender died before its
 * answer came: the next attempt finds that log too, and marks its outcome unknown.
 */
import t from 'tap';
import { JOB_PAYLOAD, deliveryJobs } from '../api/families/webhooks/deliveryJobs.ts';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

t.test('a hash-keyed log left in flight becomes unknown when the next attempt opens', { timeout: 60_000 }, async (t) => {
  const api = await startTestApi(t);
  const receiver = await startReceiver(t);
  // This worker does not dispatch: the delivery below is the one an earlier release made.
  await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50', WEBHOOK_DISPATCH_POLL: '0' });
  const hook = await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: `${receiver.url}/hook` } });
  t.equal(hook.status, 200, JSON.stringify(hook.body));
  const account = await api.request('POST', '/processing_accounts', { json: { name: 'Upgraded' } });
  t.equal(account.status, 200);

  // The delivery as the earlier release left it: its first attempt opened and logged in flight, never answered.
  await api.db.transaction(async (tx) => {
    const [delivery] = (await tx.raw(
      `insert into webhook_deliveries (id, org_id, environment, webhook_id, event_id, state, attempts, next_attempt_at)
       select 'whd_' || substr(md5(w.id || ':' || e.id || ':0'), 1, 24), e.org_id, e.environment, w.id, e.id, 'pending', 1, now()
         from events e join webhooks w on w.id = ? where e.object_id = ? and e.trigger = 'processing_status'
       returning id`, [hook.body.id, account.body.id])).rows as Array<{ id: string }>;
    await tx.raw(
      `insert into webhook_logs (id, org_id, environment, data)
       select 'whl_' || substr(md5(d.id || ':1'), 1, 24), d.org_id, d.environment,
              jsonb_build_object('webhook_id', d.webhook_id, 'event_id', d.event_id, 'trigger', 'processing_status', 'url', ?::text, 'attempt', 1,
                                 'status', 'in_flight', 'http_status', null, 'oauth_status', null, 'duration_ms', null, 'response', null, 'error', null,
                                 'next_attempt_at', null)
         from webhook_deliveries d where d.id = ?`, [`${receiver.url}/hook`, delivery.id]);
    await tx.raw(`select ${deliveryJobs(`(select d.id, ${JOB_PAYLOAD} as payload from webhook_deliveries d join events e on e.id = d.event_id where d.id = ?) j`, 'null', true)}`,
      [delivery.id]);
  });

  const logs = async () => (await api.request('GET', `/webhooks/${hook.body.id}/logs`)).body.values as Array<Record<string, unknown>>;
  const both = await eventually(logs, (values) => values.length === 2 && values.some((l) => l.status === 'delivered'), 20_000, 50);
  t.same(both.map((l) => [l.attempt, l.status]).sort(), [[1, 'unknown'], [2, 'delivered']], 'the retry is attempt 2; attempt 1 has its outcome unknown');
  t.equal(receiver.received.length, 1, 'the receiver got the retry');
});
