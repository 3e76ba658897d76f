/**
 * Deliveries and their attempt logs take ids that sort by time, as the service's other ids do
 * (the prefix, 7 digits of the time, 17 more characters): a delivery's time digits are its event's,
 * a log's are its delivery's. New rows then land at the right edge of the two tables' primary keys,
 * whatever their size, instead of at a random page of them.
 */
import t from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver } from './helpers/receiver.ts';

const ACCOUNTS = 6;

t.test('a delivery\'s id carries its event\'s time digits, and every attempt\'s log id its delivery\'s', async (t) => {
  const api = await startTestApi(t);
  await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50', WEBHOOK_RETRY_SCHEDULE: '100ms' });
  const receiver = await startReceiver(t);
  // Each event's first attempt fails and its retry is answered: two logs per delivery.
  const tried = new Set<string>();
  receiver.respond = (request) => {
    const event = String(request.headers['x-service-event-id']);
    if (tried.has(event)) return { status: 200 };
    tried.add(event);
    return { status: 500 };
  };
  const hook = await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: `${receiver.url}/hook`, retries: 2 } });
  t.equal(hook.status, 200, JSON.stringify(hook.body));
  for (let i = 0; i < ACCOUNTS; i++) {
    const account = await api.request('POST', '/processing_accounts', { json: { name: `Sorted ${i}` } });
    t.equal(account.status, 200);
  }
  const got = await receiver.waitFor(ACCOUNTS * 2, 20_000);
  t.equal(got.length, ACCOUNTS * 2, 'each event was sent twice');

  const deliveries = await api.db.raw(
    `select d.id, e.id as event_id, (select array_agg(l.id order by l.created_at) from webhook_logs l where l.data->>'webhook_id' = d.webhook_id
                                        and l.data->>'event_id' = e.id) as logs
       from webhook_deliveries d join events e on e.id = d.event_id where d.webhook_id = ?`, [hook.body.id]);
  const found = deliveries.rows as Array<{ id: string; event_id: string; logs: string[] }>;
  t.equal(found.length, ACCOUNTS, 'one delivery per event');
  const timeDigits = (id: string) => id.slice(id.indexOf('_') + 1, id.indexOf('_') + 8);
  for (const delivery of found) {
    t.match(delivery.id, /^whd_[0-9A-Za-z]{24}$/, 'the delivery id has the service\'s id format');
    t.equal(timeDigits(delivery.id), timeDigits(delivery.event_id), 'the delivery id starts with its event\'s time');
    t.equal(delivery.logs.length, 2, 'both attempts logged');
    for (const log of delivery.logs) {
      t.match(log, /^whl_[0-9A-Za-z]{24}$/, 'the log id has the service\'s id format');
      t.equal(timeDigits(log), timeDigits(delivery.id), 'the log id starts with its delivery\'s time');
    }
  }
  const ids = found.flatMap((d) => [d.id, ...d.logs]);
  t.equal(new Set(ids).size, ids.length, 'no two ids alike');
});
