/**
 * `POST /api_keys/roll` (the console's "Roll key"): a secret key rolls itself into a new one with
 * the same org, environment and settings, shown once; the old one works for `expire_in` seconds.
 * A restricted key or a client token may not; bad input is a 400.
 */
import t from 'tap';
import { createTestKey } from './helpers/keys.ts';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);

t.test('a rolled key: the new one works at once, the old one until its expiry, the change audited', async (t) => {
  const old = await api.newKey('Rolling shop', 'test');
  const paid = await api.request('POST', '/customers', { key: old, json: { name: 'Kept', email: 'kept@example.com' } });
  const rolled = await api.request('POST', '/api_keys/roll', { key: old, json: { expire_in: 0 } });
  t.equal(rolled.status, 200, JSON.stringify(rolled.body));
  t.match(rolled.body, { object: 'api_key', environment: 'test', secret_key: /^test_secret_key_[A-Za-z0-9]{32}$/, previous: { key_prefix: old.slice(0, -24) } });
  t.equal(rolled.body.key_prefix, rolled.body.secret_key.slice(0, -24));
  const fresh = rolled.body.secret_key;
  t.equal((await api.request('GET', `/customers/${paid.body.id}`, { key: fresh })).status, 200, 'the new key sees the same org');
  t.equal((await api.request('GET', '/customers', { key: old })).status, 401, 'expire_in 0: the old key stops at once');
  const audit = await api.request('GET', `/audit_events?object_type=api_key&object_id=${rolled.body.id}`, { key: fresh });
  t.equal(audit.body.values.length, 1, 'the new key is in the audit history');
  t.notMatch(JSON.stringify(audit.body), new RegExp(fresh), 'without its secret');

  const again = await api.request('POST', '/api_keys/roll', { key: fresh, form: '' });
  t.equal(again.status, 200);
  t.ok((await api.request('GET', '/customers', { key: fresh })).status === 200, 'by default the old key keeps working (a day)');
});

t.test('a restricted key, a client token and bad input are refused', async (t) => {
  const restricted = (await createTestKey(api.db, 'acme', 'test', {}, ['customers:read'])).secret;
  const refused = await api.request('POST', '/api_keys/roll', { key: restricted, json: {} });
  t.equal(refused.status, 403);
  t.equal(refused.body.error_type, 'Forbidden');
  for (const body of [{ expire_in: -1 }, { expire_in: 604801 }, { expire_in: 'soon' }, { rotate: true }]) {
    const res = await api.request('POST', '/api_keys/roll', { json: body });
    t.equal(res.status, 400, JSON.stringify(body));
    t.equal(res.body.error_type, 'InvalidAttributes');
  }
  const token = await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { payment_form: { payment: { amount: 7 } } } } });
  t.equal(token.status, 200);
  const byToken = await api.request('POST', '/api_keys/roll', { key: token.body.id, json: {} });
  t.equal(byToken.status, 403, 'a client token may not');
  t.equal((await api.request('GET', '/customers')).status, 200, 'the refused requests rolled nothing');
});
