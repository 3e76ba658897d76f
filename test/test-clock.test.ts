/** The test clock over HTTP (CONTRACT §15): read, moved forward by a secret key, never backwards, never live. */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);
const DAY = 86_400_000;
const TODAY = new Date().toISOString().slice(0, 10);

t.test('PUT /test_clock runs the billing days it passes and GET shows the new time', async (t) => {
  const customer = (await api.request('POST', '/customers', { json: { name: 'Subscriber', email: 's@example.com' } })).body.id;
  await api.request('POST', '/processing_accounts', { json: { name: 'Biller' } });
  const schedule = await api.request('POST', '/billing_schedules', { json: { customer_id: customer, start_date: TODAY, recurring_frequency: 'weekly', charges: { amount: 5 } } });
  t.equal(schedule.status, 200, JSON.stringify(schedule.body));
  const target = new Date(Date.now() + 8 * DAY).toISOString().slice(0, 19).replace('T', ' ');
  const moved = await api.request('PUT', '/test_clock', { json: { now: target } });
  t.same([moved.status, moved.body], [200, { object: 'test_clock', now: target }]);
  t.same((await api.request('GET', '/test_clock')).body, { object: 'test_clock', now: target });
  const invoices = (await api.request('GET', `/invoices?billing_schedule_id=${schedule.body.id}`)).body.values;
  t.equal(invoices.length, 2, 'today\'s invoice and next week\'s');
});

t.test('the clock never moves backwards, needs a time, and has no live environment', async (t) => {
  t.equal((await api.request('PUT', '/test_clock', { json: { now: '2020-01-01 00:00:00' } })).status, 400);
  t.equal((await api.request('PUT', '/test_clock', { json: { now: 'tomorrow' } })).status, 400);
  const live = await api.newKey('acme', 'live');
  t.equal((await api.request('PUT', '/test_clock', { key: live, json: { now: '2099-01-01 00:00:00' } })).status, 403);
  const token = (await api.request('POST', '/access_tokens', { json: { type: 'client' } })).body.id;
  t.equal((await api.request('GET', '/test_clock', { key: token })).status, 403, 'not with a client token');
});
