/**
 * `Idempotency-Key` on writes: one effect per key, the stored answer replayed, another body with
 * the same key refused, concurrent duplicates collapsed, errors replayed too, keys scoped per credential and org.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';
import { createTestKey } from './helpers/keys.ts';

const api = await startTestApi(t);

let counter = 0;
/** A fresh key string per test, so tests never share a stored answer. */
const idemKey = (label: string) => `idem-${label}-${++counter}-${Date.now()}`;

async function customersNamed(name: string): Promise<any[]> {
  return api.db('accounts').whereRaw(`data->>'name' = ?`, [name]).select('id', 'org_id', 'environment', 'data');
}

t.test('the same key and body replay the stored response and create one row', async (t) => {
  const key = idemKey('replay');
  const body = { name: 'Replay Ann', email: 'replay@example.com' };
  const first = await api.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': key } });
  t.equal(first.status, 200, JSON.stringify(first.body));
  t.equal(first.headers.get('Idempotent-Replayed'), null, 'the first answer is not a replay');

  const second = await api.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': key } });
  t.equal(second.status, 200);
  t.equal(second.headers.get('Idempotent-Replayed'), 'true', 'the second answer says it is a replay');
  t.same(second.body, first.body, 'the replayed body is identical, id and timestamps included');

  const third = await api.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': key } });
  t.same(third.body, first.body, 'and so is the third');

  const rows = await customersNamed('Replay Ann');
  t.equal(rows.length, 1, 'one row created');
  t.equal(rows[0].id, first.body.id);
});

t.test('without an Idempotency-Key the same body creates twice', async (t) => {
  const body = { name: 'No Key' };
  const a = await api.request('POST', '/customers', { json: body });
  const b = await api.request('POST', '/customers', { json: body });
  t.not(a.body.id, b.body.id);
  t.equal((await customersNamed('No Key')).length, 2);
});

t.test('the replay still answers after the object changed', async (t) => {
  const key = idemKey('stale');
  const body = { name: 'Stale Sam' };
  const first = await api.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': key } });
  await api.request('PUT', `/customers/${first.body.id}`, { json: { phone: '123' } });
  const again = await api.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': key } });
  t.same(again.body, first.body, 'the stored response, not a fresh rendering');
  t.equal((await customersNamed('Stale Sam')).length, 1);
});

t.test('the same key with another body is 409 Conflict and creates nothing', async (t) => {
  const key = idemKey('conflict');
  const first = await api.request('POST', '/customers', { json: { name: 'Conflict One' }, headers: { 'Idempotency-Key': key } });
  t.equal(first.status, 200);
  const other = await api.request('POST', '/customers', { json: { name: 'Conflict Two' }, headers: { 'Idempotency-Key': key } });
  t.equal(other.status, 409);
  t.match(other.body, { object: 'error', error_type: 'Conflict' });
  t.type(other.body.error_description, 'string');
  t.equal(other.headers.get('Idempotent-Replayed'), null);
  t.equal((await customersNamed('Conflict Two')).length, 0, 'the second body had no effect');
  t.equal((await customersNamed('Conflict One')).length, 1);
});

t.test('the same key on another path, method or version is 409 Conflict', async (t) => {
  const key = idemKey('path');
  const body = { name: 'Path Pat' };
  const first = await api.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': key } });
  t.equal(first.status, 200);
  const otherPath = await api.request('POST', '/processing_accounts', { json: body, headers: { 'Idempotency-Key': key } });
  t.equal(otherPath.status, 409, 'other path');
  const otherVersion = await api.request('POST', '/customers', { json: body, version: 'v2', headers: { 'Idempotency-Key': key } });
  t.equal(otherVersion.status, 409, 'other version');
  const otherMethod = await api.request('PUT', `/customers/${first.body.id}`, { json: body, headers: { 'Idempotency-Key': key } });
  t.equal(otherMethod.status, 409, 'other method');
  t.equal((await customersNamed('Path Pat')).length, 1);
  t.equal((await api.db('accounts').where({ type: 'processing' }).whereRaw(`data->>'name' = 'Path Pat'`)).length, 0);
});

t.test('a form body with the same key replays like JSON', async (t) => {
  const key = idemKey('form');
  const first = await api.request('POST', '/customers', { form: 'name=Form+Fay&address[city]=Oslo', headers: { 'Idempotency-Key': key } });
  t.equal(first.status, 200, JSON.stringify(first.body));
  const second = await api.request('POST', '/customers', { form: 'name=Form+Fay&address[city]=Oslo', headers: { 'Idempotency-Key': key } });
  t.equal(second.headers.get('Idempotent-Replayed'), 'true');
  t.same(second.body, first.body);
  t.equal((await customersNamed('Form Fay')).length, 1);
});

t.test('an update with a key is applied once and replayed', async (t) => {
  const created = await api.request('POST', '/processing_accounts', { json: { name: 'Upd Shop' } });
  const key = idemKey('update');
  const first = await api.request('PUT', `/processing_accounts/${created.body.id}`, { json: { status: 'active' }, headers: { 'Idempotency-Key': key } });
  t.equal(first.status, 200);
  const modified = (await api.db('accounts').where({ id: created.body.id }).first()).modified_at;
  const second = await api.request('PUT', `/processing_accounts/${created.body.id}`, { json: { status: 'active' }, headers: { 'Idempotency-Key': key } });
  t.equal(second.headers.get('Idempotent-Replayed'), 'true');
  t.same(second.body, first.body);
  t.same((await api.db('accounts').where({ id: created.body.id }).first()).modified_at, modified, 'the replay did not write again');
  const events = await api.db('events').where({ object_id: created.body.id });
  t.same(events.map((e: any) => e.value).sort(), ['active', 'pending'], 'one status event per real change');
});

t.test('20 concurrent POSTs with the same key and body create exactly one row', async (t) => {
  const key = idemKey('race');
  const body = { name: 'Race Rae', email: 'race@example.com' };
  const responses = await Promise.all(Array.from({ length: 20 }, () =>
    api.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': key } })));
  const rows = await customersNamed('Race Rae');
  t.equal(rows.length, 1, 'exactly one customer row');
  const succeeded = responses.filter((r) => r.status === 200);
  const conflicts = responses.filter((r) => r.status === 409);
  t.equal(succeeded.length + conflicts.length, 20, `every answer is 200 or 409: ${responses.map((r) => r.status).join(',')}`);
  t.ok(succeeded.length >= 1, 'at least one 200');
  for (const r of succeeded) t.equal(r.body.id, rows[0]?.id, 'every 200 carries the one id');
  for (const r of conflicts) t.match(r.body, { object: 'error', error_type: 'Conflict' });
  t.ok(succeeded.filter((r) => r.headers.get('Idempotent-Replayed') === null).length <= 1, 'at most one answer is the original');

  const after = await api.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': key } });
  t.equal(after.status, 200, 'once settled, the key replays');
  t.equal(after.body.id, rows[0]?.id);
});

t.test('an error response (400) is stored and replayed too', async (t) => {
  const key = idemKey('error');
  const body = { email: 'no-name@example.com' }; // name is required
  const first = await api.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': key } });
  t.equal(first.status, 400);
  t.equal(first.body.error_type, 'InvalidAttributes');
  const second = await api.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': key } });
  t.equal(second.status, 400, 'the replay keeps the status');
  t.equal(second.headers.get('Idempotent-Replayed'), 'true');
  t.same(second.body, first.body, 'and the error body');
  const other = await api.request('POST', '/customers', { json: { name: 'Fixed' }, headers: { 'Idempotency-Key': key } });
  t.equal(other.status, 409, 'a corrected body under the same key is a conflict, not a second try');
  t.equal((await customersNamed('Fixed')).length, 0);
});

t.test('a 404 is replayed too', async (t) => {
  const key = idemKey('404');
  const first = await api.request('PUT', '/customers/acct_missing0000000000000000', { json: { name: 'x' }, headers: { 'Idempotency-Key': key } });
  t.equal(first.status, 404);
  const second = await api.request('PUT', '/customers/acct_missing0000000000000000', { json: { name: 'x' }, headers: { 'Idempotency-Key': key } });
  t.equal(second.status, 404);
  t.equal(second.headers.get('Idempotent-Replayed'), 'true');
  t.same(second.body, first.body);
});

t.test('keys are per org: the same key string in another org is independent', async (t) => {
  const key = idemKey('org');
  const body = { name: 'Org Olga' };
  const otherKey = await api.newKey('other-org', 'test');
  const mine = await api.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': key } });
  const theirs = await api.request('POST', '/customers', { key: otherKey, json: body, headers: { 'Idempotency-Key': key } });
  t.equal(mine.status, 200);
  t.equal(theirs.status, 200);
  t.equal(theirs.headers.get('Idempotent-Replayed'), null, 'not a replay of the other org');
  t.not(theirs.body.id, mine.body.id, 'a distinct object');
  const rows = await customersNamed('Org Olga');
  t.equal(rows.length, 2);
  t.equal(new Set(rows.map((r) => r.org_id)).size, 2, 'one in each org');
  t.equal((await api.request('GET', `/customers/${mine.body.id}`, { key: otherKey })).status, 404, "no replay leaks the other org's object");

  const otherBody = await api.request('POST', '/customers', { key: otherKey, json: { name: 'Other body' }, headers: { 'Idempotency-Key': `${key}-x` } });
  t.equal(otherBody.status, 200);
  const reuse = await api.request('POST', '/customers', { json: { name: 'Other body' }, headers: { 'Idempotency-Key': `${key}-x` } });
  t.equal(reuse.status, 200, 'a key used by another org with another body is still free here');
  t.equal(reuse.headers.get('Idempotent-Replayed'), null);
});

t.test('a key belongs to its credential: another key of the same org never receives the stored answer', async (t) => {
  const key = idemKey('credential');
  const hook = { trigger: 'payment', url: 'https://example.com/idem-hook' };
  const first = await api.request('POST', '/webhooks', { json: hook, headers: { 'Idempotency-Key': key } });
  t.equal(first.status, 200, JSON.stringify(first.body));
  t.type(first.body.sender_secret, 'string', 'the secret is shown once, to its creator');

  const restricted = (await createTestKey(api.db, 'acme', 'test', {}, ['webhooks:write'])).secret;
  const sibling = await api.request('POST', '/webhooks', { key: restricted, json: hook, headers: { 'Idempotency-Key': key } });
  t.equal(sibling.status, 200, JSON.stringify(sibling.body));
  t.equal(sibling.headers.get('Idempotent-Replayed'), null, 'not a replay');
  t.not(sibling.body.id, first.body.id, 'its request ran as its own');
  t.not(sibling.body.sender_secret, first.body.sender_secret, 'the first webhook\'s secret is not handed over');
  t.equal((await api.db('webhooks').whereRaw(`data->>'url' = ?`, [hook.url])).length, 2, 'two webhooks stored');

  const again = await api.request('POST', '/webhooks', { json: hook, headers: { 'Idempotency-Key': key } });
  t.equal(again.headers.get('Idempotent-Replayed'), 'true', 'the same credential repeating still gets the stored answer');
  t.same(again.body, first.body);
  const siblingAgain = await api.request('POST', '/webhooks', { key: restricted, json: hook, headers: { 'Idempotency-Key': key } });
  t.equal(siblingAgain.headers.get('Idempotent-Replayed'), 'true', 'and so does the other key, with its own answer');
  t.equal(siblingAgain.body.id, sibling.body.id);
});

t.test('keys are per environment: the same key with the live key is independent', async (t) => {
  const key = idemKey('env');
  const body = { name: 'Env Eve' };
  const liveKey = await api.newKey('acme', 'live');
  const test = await api.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': key } });
  const live = await api.request('POST', '/customers', { key: liveKey, json: body, headers: { 'Idempotency-Key': key } });
  t.equal(live.status, 200);
  t.equal(live.headers.get('Idempotent-Replayed'), null);
  t.not(live.body.id, test.body.id);
  t.same((await customersNamed('Env Eve')).map((r) => r.environment).sort(), ['live', 'test']);
});

t.test('an Idempotency-Key over 255 characters is 400 and creates nothing', async (t) => {
  const res = await api.request('POST', '/customers', { json: { name: 'Long Key' }, headers: { 'Idempotency-Key': 'k'.repeat(256) } });
  t.equal(res.status, 400);
  t.match(res.body, { object: 'error', error_type: 'BadRequest' });
  t.equal((await customersNamed('Long Key')).length, 0);
});

// The request hash covers the raw body bytes, and a multipart body's boundary is random per request.
t.test('a multipart retry (same fields, a new boundary) replays', async (t) => {
  const key = idemKey('multipart');
  const form = () => {
    const data = new FormData();
    data.set('name', 'Multi Mo');
    data.set('address[city]', 'Lima');
    return data;
  };
  const first = await api.request('POST', '/customers', { body: form(), headers: { 'Idempotency-Key': key } });
  t.equal(first.status, 200, JSON.stringify(first.body));
  const second = await api.request('POST', '/customers', { body: form(), headers: { 'Idempotency-Key': key } });
  t.equal(second.status, 200, `the retry is not a conflict: ${JSON.stringify(second.body)}`);
  t.equal(second.headers.get('Idempotent-Replayed'), 'true');
  t.same(second.body, first.body);
  t.equal((await customersNamed('Multi Mo')).length, 1);
});
