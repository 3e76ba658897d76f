/**
 * Who may see what (CONTRACT §2–4, §10): keys and their failures, org and environment isolation,
 * X-API-Version, unknown paths, the rate limit, body limits, and error bodies that never leak
 * internals.
 */
import t, { type Test } from 'tap';
import http from 'node:http';
import { loadConfig } from '../api/config.ts';
import { revokeKey } from '../api/db/keys.ts';
import { createTestKey } from './helpers/keys.ts';
import { startWeb } from '../api/server.ts';
import { freshDatabase } from './helpers/db.ts';
import { startTestApi, type ApiResponse } from './helpers/api.ts';

const api = await startTestApi(t);

/** Signs of a leaked stack trace or SQL statement in a response body. */
const LEAKS = [/\bat \S+ \(/, /\.(ts|js):\d+/, /node_modules/, /\bselect\b.*\bfrom\b/i, /\binsert into\b/i, /\bupdate \w+ set\b/i, /\bdelete from\b/i, /\$\d+::/, /DatabaseError|TypeError|ReferenceError/];

function assertNoLeak(t: Test, res: ApiResponse, label: string): void {
  const text = typeof res.body === 'string' ? res.body : JSON.stringify(res.body);
  for (const pattern of LEAKS) t.notMatch(text, pattern, `${label}: body does not leak ${pattern}`);
}

function assertError(t: Test, res: ApiResponse, status: number, type: string, label = `${status} ${type}`): void {
  t.equal(res.status, status, `${label}: status (${JSON.stringify(res.body)})`);
  t.equal(res.body?.object, 'error', `${label}: an error object`);
  t.equal(res.body?.error_type, type, `${label}: error_type`);
  t.type(res.body?.error_description, 'string', `${label}: error_description`);
  assertNoLeak(t, res, label);
}

/** Raw request without the helper's Authorization header. */
async function raw(path: string, headers: Record<string, string>, init: RequestInit = {}): Promise<ApiResponse> {
  const response = await fetch(api.url + path, { ...init, headers });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.status, headers: response.headers, body };
}

const basic = (secret: string, password = '') => `Basic ${Buffer.from(`${secret}:${password}`).toString('base64')}`;

async function createCustomer(key: string, name: string): Promise<string> {
  const res = await api.request('POST', '/customers', { key, json: { name, email: `${name.toLowerCase()}@example.com` } });
  if (res.status !== 200) throw new Error(`fixture: ${JSON.stringify(res.body)}`);
  return res.body.id;
}

// ---------- authentication ----------

t.test('GET /healthz answers 200 without a key', async (t) => {
  const res = await raw('/healthz', {});
  t.equal(res.status, 200);
  t.equal(res.body.object, 'health');
  t.equal(res.body.status, 'ok');
});

t.test('a request without a key is 401 Unauthorized with the error object', async (t) => {
  assertError(t, await raw('/customers', {}), 401, 'Unauthorized', 'no Authorization');
  assertError(t, await api.request('POST', '/customers', { key: null, json: { name: 'X' } }), 401, 'Unauthorized', 'POST without a key');
  t.equal((await api.db('accounts').whereRaw(`data->>'name' = 'X'`)).length, 0, 'nothing was created');
});

t.test('malformed Authorization headers are 401', async (t) => {
  const cases: Array<[string, string]> = [
    ['empty Bearer', 'Bearer'],
    ['empty Basic', 'Basic'],
    ['unknown scheme', `Token ${api.key}`],
    ['the key alone, no scheme', api.key],
    ['Basic with undecodable base64', 'Basic !!!not-base64!!!'],
    ['Basic with an empty username', basic('')],
    ['key without the secret_key prefix', `Bearer ${api.key.replace('test_secret_key_', 'test_public_key_')}`],
    ['an absurdly long key', `Bearer test_secret_key_${'a'.repeat(5000)}`],
    ['a key with a trailing character', `Bearer ${api.key}x`],
    ['a truncated key', `Bearer ${api.key.slice(0, -1)}`],
  ];
  for (const [label, header] of cases) assertError(t, await raw('/customers', { Authorization: header }), 401, 'Unauthorized', label);
});

t.test('a well-formed but unknown key is 401', async (t) => {
  assertError(t, await raw('/customers', { Authorization: `Bearer test_secret_key_${'Z'.repeat(32)}` }), 401, 'Unauthorized', 'unknown test key');
  assertError(t, await raw('/customers', { Authorization: `Bearer secret_key_${'Z'.repeat(32)}` }), 401, 'Unauthorized', 'unknown live key');
});

t.test('a revoked key is 401 from the next request on', async (t) => {
  const secret = await api.newKey('revocable', 'test');
  t.equal((await api.request('GET', '/customers', { key: secret })).status, 200, 'works before revoking');
  const prefix = secret.slice(0, secret.length - 24);
  t.same(await revokeKey(api.db, prefix), { matches: 1, revoked: true }, 'exactly this key revoked');
  assertError(t, await api.request('GET', '/customers', { key: secret }), 401, 'Unauthorized', 'after revoking');
  assertError(t, await raw('/customers', { Authorization: `Bearer ${secret}` }), 401, 'Unauthorized', 'after revoking, Bearer');
  t.equal((await api.request('GET', '/customers')).status, 200, 'other keys keep working');
});

t.test('Bearer and Basic both authenticate the same key', async (t) => {
  const id = await createCustomer(api.key, 'Both');
  for (const [label, header] of [
    ['Bearer', `Bearer ${api.key}`],
    ['bearer (lower case scheme)', `bearer ${api.key}`],
    ['Basic key:', basic(api.key)],
    ['Basic key (no colon)', `Basic ${Buffer.from(api.key).toString('base64')}`],
  ]) {
    const res = await raw(`/customers/${id}`, { Authorization: header });
    t.equal(res.status, 200, label);
    t.equal(res.body.id, id, `${label}: sees the object`);
  }
});

// ---------- tenancy ----------

t.test("another org's object is 404 on get, update and delete, and never listed", async (t) => {
  const mine = await createCustomer(api.key, 'Mine');
  const otherKey = await api.newKey('other-org', 'test');
  const theirs = await createCustomer(otherKey, 'Theirs');
  const before = await api.db('accounts').where({ id: theirs }).first();

  assertError(t, await api.request('GET', `/customers/${theirs}`), 404, 'NotFound', 'get');
  assertError(t, await api.request('GET', `/accounts/${theirs}`, { version: 'v2' }), 404, 'NotFound', 'get via v2 /accounts');
  assertError(t, await api.request('PUT', `/customers/${theirs}`, { json: { name: 'Hijacked' } }), 404, 'NotFound', 'update');
  assertError(t, await api.request('DELETE', `/customers/${theirs}`), 404, 'NotFound', 'delete');

  const listed = await api.request('GET', '/customers?limit=10000');
  t.notOk(listed.body.values.some((c: any) => c.id === theirs), 'not in my list');
  t.ok(listed.body.values.some((c: any) => c.id === mine), 'my own object is');
  t.same((await api.request('GET', `/customers?id=${theirs}`)).body.values, [], 'not found by an id filter');
  t.same((await api.request('GET', `/customers?q=${encodeURIComponent(`id == "${theirs}"`)}`)).body.values, [], 'not found by q');
  t.same((await api.request('GET', '/accounts?name=Theirs', { version: 'v2' })).body.values, [], 'not found by name in v2');
  t.same((await api.request('GET', '/customers?fields=count&name=Theirs')).body.values, [{ count: 0 }], 'not counted');

  const byQuery = await api.request('PUT', `/customers?id=${theirs}&mode=query`, { json: { name: 'Hijacked' } });
  t.same(byQuery.body.values, [], 'update by query matches nothing');
  const deleteByQuery = await api.request('DELETE', `/customers?id=${theirs}&mode=query`);
  t.same(deleteByQuery.body.values, [], 'delete by query matches nothing');
  const updateMany = await api.request('PUT', '/customers', { json: { object: 'list', values: [{ id: theirs, name: 'Hijacked' }] } });
  t.equal(updateMany.status, 400, 'update many refuses the foreign id');
  t.equal(updateMany.body.object, 'error');
  const deleteMany = await api.request('DELETE', '/customers', { json: { object: 'list', values: [{ id: theirs }] } });
  t.equal(deleteMany.status, 400, 'delete many refuses the foreign id');

  t.same(await api.db('accounts').where({ id: theirs }).first(), before, 'their row is untouched');
  const theirView = await api.request('GET', `/customers/${theirs}`, { key: otherKey });
  t.equal(theirView.body.name, 'Theirs', 'the owner still sees it');
  t.same((await api.request('GET', '/customers', { key: otherKey })).body.values.map((c: any) => c.id), [theirs], 'the other org sees only its own');
});

t.test("a customer may not point at another org's processing account", async (t) => {
  const otherKey = await api.newKey('other-org', 'test');
  const theirs = await api.request('POST', '/processing_accounts', { key: otherKey, json: { name: 'Their shop' } });
  t.equal(theirs.status, 200);
  const res = await api.request('POST', '/customers', { json: { name: 'Sneaky', primary_processing_id: theirs.body.id } });
  t.equal(res.status, 400);
  t.equal(res.body.error_type, 'InvalidAttributes');
  t.equal((await api.db('accounts').whereRaw(`data->>'name' = 'Sneaky'`)).length, 0);
});

t.test('a live key does not see test data, and a test key does not see live data', async (t) => {
  const liveKey = await api.newKey('acme', 'live');
  const testId = await createCustomer(api.key, 'TestSide');
  const liveId = await createCustomer(liveKey, 'LiveSide');

  assertError(t, await api.request('GET', `/customers/${testId}`, { key: liveKey }), 404, 'NotFound', 'live key, test object');
  assertError(t, await api.request('GET', `/customers/${liveId}`), 404, 'NotFound', 'test key, live object');
  assertError(t, await api.request('PUT', `/customers/${testId}`, { key: liveKey, json: { name: 'x' } }), 404, 'NotFound', 'live key updates test object');
  assertError(t, await api.request('DELETE', `/customers/${liveId}`), 404, 'NotFound', 'test key deletes live object');

  const liveList = (await api.request('GET', '/customers', { key: liveKey })).body.values.map((c: any) => c.id);
  t.same(liveList, [liveId], 'the live list holds only live objects');
  const testList = (await api.request('GET', '/customers?limit=10000')).body.values.map((c: any) => c.id);
  t.ok(testList.includes(testId), 'the test list holds the test object');
  t.notOk(testList.includes(liveId), 'and not the live one');

  const row = await api.db('accounts').where({ id: liveId }).first();
  t.equal(row.environment, 'live', 'stored in the live environment');
  t.equal((await api.db('accounts').where({ id: testId }).first()).environment, 'test');
});

// ---------- versions ----------

t.test('X-API-Version: v1, 1 and v1.3 render v1; v2, 2 and v2.1-beta render v2', async (t) => {
  const id = await createCustomer(api.key, 'Versioned');
  for (const version of ['v1', '1', 'v1.3']) {
    const res = await api.request('GET', `/customers/${id}`, { version });
    t.equal(res.status, 200, version);
    t.equal(res.body.object, 'customer', `${version}: v1 object`);
    t.equal(res.body.email, 'versioned@example.com', `${version}: v1 email`);
  }
  for (const version of ['v2', '2', 'v2.1-beta', 'v2.7']) {
    const res = await api.request('GET', `/customers/${id}`, { version });
    t.equal(res.status, 200, version);
    t.equal(res.body.object, 'account', `${version}: v2 object`);
    t.equal(res.body.contact_details?.email, 'versioned@example.com', `${version}: v2 contact_details.email`);
  }
  const absent = await api.request('GET', `/customers/${id}`);
  t.equal(absent.body.object, 'customer', 'no header means v1');
});

t.test('X-API-Version: v3, banana and others are 400 BadRequest naming X-API-Version', async (t) => {
  for (const version of ['v3', 'banana', '3', 'v', 'v2.', 'v2.x', '12', 'v1 v2']) {
    const res = await api.request('GET', '/customers', { version });
    assertError(t, res, 400, 'BadRequest', `X-API-Version: ${version}`);
    t.equal(res.body.error_description, 'X-API-Version', `${version}: description`);
  }
  const before = await api.db('accounts').count({ n: '*' }).first();
  const write = await api.request('POST', '/customers', { version: 'v3', json: { name: 'Nope' } });
  t.equal(write.status, 400, 'a write with a bad version is refused');
  t.same(await api.db('accounts').count({ n: '*' }).first(), before, 'and creates nothing');
});

// ---------- paths and bodies ----------

t.test('an unknown path is 404 NotFound with the error object', async (t) => {
  for (const path of ['/nope', '/nope/acct_123', '/customers/acct_x/extra', '/']) {
    assertError(t, await api.request('GET', path), 404, 'NotFound', `GET ${path}`);
  }
  assertError(t, await api.request('POST', '/nope', { json: { name: 'x' } }), 404, 'NotFound', 'POST /nope');
  assertError(t, await api.request('GET', '/customers/acct_doesnotexist000000000000'), 404, 'NotFound', 'unknown id');
});

/**
 * A POST over a connection of its own that is closed once the answer arrives: the server answers
 * 413 without reading the rest of the body, and a half-read keep-alive connection would hold the
 * test server's shutdown for its whole drain timeout.
 */
async function postOnce(path: string, headers: Record<string, string>, send: (req: http.ClientRequest) => void): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${api.url}${path}`, { method: 'POST', agent: false, headers: { Authorization: `Bearer ${api.key}`, ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { text += chunk; });
      res.on('end', () => {
        req.destroy();
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode ?? 0, headers: new Headers(res.headers as Record<string, string>), body });
      });
    });
    // The server may answer and close before the whole body is written.
    req.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EPIPE' || error.code === 'ECONNRESET' ? undefined : reject(error)));
    send(req);
  });
}

t.test('a body over 1 MiB is 413 PayloadTooLarge and creates nothing', async (t) => {
  const before = await api.db('accounts').count({ n: '*' }).first();
  const big = JSON.stringify({ name: 'Big', attrs: { blob: 'x'.repeat(1024 * 1024) } });
  const json = await postOnce('/customers', { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(big)) }, (req) => req.end(big));
  assertError(t, json, 413, 'PayloadTooLarge', 'JSON with Content-Length');
  const form = `name=Big&attrs[blob]=${'x'.repeat(1024 * 1024)}`;
  const formRes = await postOnce('/customers', { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': String(form.length) }, (req) => req.end(form));
  assertError(t, formRes, 413, 'PayloadTooLarge', 'form body');
  t.same(await api.db('accounts').count({ n: '*' }).first(), before);
});

t.test('a chunked body over 1 MiB (no Content-Length) is 413', async (t) => {
  const before = await api.db('accounts').count({ n: '*' }).first();
  const res = await postOnce('/customers', { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }, (req) => {
    const chunk = 'x'.repeat(64 * 1024);
    req.write('{"name":"Chunked","attrs":{"blob":"');
    let sent = 0;
    const pump = () => {
      while (sent < 20) {
        sent += 1;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end('"}}');
    };
    pump();
  });
  assertError(t, res, 413, 'PayloadTooLarge', 'chunked');
  t.same(await api.db('accounts').count({ n: '*' }).first(), before);
});

// The 413 is sent without reading the body, and the keep-alive connection is left half-read: it
// is never idle, so a graceful stop (SIGTERM) waits the whole SETTLE_SHUTDOWN_TIMEOUT for it.
t.test('a 413 over a keep-alive connection does not hold up a graceful shutdown', async (t) => {
  const databaseUrl = await freshDatabase(t);
  const web = await startWeb(loadConfig({ LOG_LEVEL: 'silent', SETTLE_RATE_LIMIT: 'off', DATABASE_URL: databaseUrl, PORT: '0', SETTLE_SHUTDOWN_TIMEOUT: '2000' }), { keyCacheMs: 0 });
  const { secret } = await createTestKey(web.db, 'acme', 'test');
  const res = await fetch(`${web.url}/customers`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }),
  });
  t.equal(res.status, 413);
  await res.text();
  const started = Date.now();
  await web.stop();
  const took = Date.now() - started;
  t.ok(took < 1000, `stop() returned in ${took} ms`);
});

t.test('a body just under 1 MiB is accepted by the body parser', async (t) => {
  // attrs is capped at 8 KiB, so the field check refuses it: the point is that it is a 400, not a 413.
  const body = JSON.stringify({ name: 'Almost', phone: 'x'.repeat(1024 * 1024 - 100) });
  t.ok(Buffer.byteLength(body) < 1024 * 1024);
  const res = await api.request('POST', '/customers', { body, headers: { 'Content-Type': 'application/json' } });
  assertError(t, res, 400, 'InvalidAttributes', 'too long a phone');
});

t.test('malformed JSON is 400 BadRequest and creates nothing', async (t) => {
  const before = await api.db('accounts').count({ n: '*' }).first();
  for (const body of ['{', '{"name": "A",}', "{'name': 'A'}", 'name=A', '{"name": "A"} trailing', '\u0000']) {
    assertError(t, await api.request('POST', '/customers', { body, headers: { 'Content-Type': 'application/json' } }), 400, 'BadRequest', `body ${JSON.stringify(body)}`);
  }
  for (const body of ['[]', '"text"', '42', 'null']) {
    assertError(t, await api.request('POST', '/customers', { body, headers: { 'Content-Type': 'application/json' } }), 400, 'BadRequest', `non-object JSON ${body}`);
  }
  t.same(await api.db('accounts').count({ n: '*' }).first(), before);
});

t.test('an unsupported Content-Type is 400', async (t) => {
  assertError(t, await api.request('POST', '/customers', { body: 'name=A', headers: { 'Content-Type': 'text/plain' } }), 400, 'BadRequest', 'text/plain');
});

t.test('functions and comparisons over the wrong type are refused with 400 before they reach the database', async (t) => {
  for (const query of ['q=abs(name)%20%3E%201', 'fields=sum(name)', 'fields=count(1)', 'q=created_at%20%3E%20name']) {
    const res = await api.request('GET', `/customers?${query}`);
    t.equal(res.status, 400, `${query}: 400`);
    t.equal(res.body?.error_type, 'BadRequest', `${query}: BadRequest`);
    assertNoLeak(t, res, query);
  }
});

// ---------- rate limit ----------

t.test('rate limit: a burst past the bucket is 429 TooManyRequests with Retry-After', async (t) => {
  // The limiter's clock stands still until the test moves it: no refill between requests, no sleeping.
  let movedMs = 0;
  const frozenAt = Date.now();
  const limited = await startTestApi(t, { SETTLE_RATE_LIMIT: '5/5' }, { clock: () => new Date(frozenAt + movedMs) });
  const responses = await Promise.all(Array.from({ length: 20 }, () => limited.request('GET', '/customers')));
  const ok = responses.filter((r) => r.status === 200);
  const refused = responses.filter((r) => r.status === 429);
  t.equal(ok.length + refused.length, 20, 'every answer is 200 or 429');
  t.equal(ok.length, 5, 'the burst of 5 passed');
  t.equal(refused.length, 15, 'the rest were refused');
  const first = refused[0];
  t.match(first.body, { object: 'error', error_type: 'TooManyRequests' });
  t.type(first.body.error_description, 'string');
  const retryAfter = first.headers.get('Retry-After');
  t.match(retryAfter, /^\d+$/, 'Retry-After is a whole number of seconds');
  t.ok(Number(retryAfter) >= 1, 'Retry-After is at least 1');

  const otherKey = await limited.newKey('acme', 'test');
  t.equal((await limited.request('GET', '/customers', { key: otherKey })).status, 200, 'the limit is per key');

  t.equal((await limited.request('GET', '/customers')).status, 429, 'with no time passed it is still refused');
  movedMs += Number(retryAfter) * 1000;
  t.equal((await limited.request('GET', '/customers')).status, 200, 'after Retry-After the key may call again');
});

t.test('rate limit: a refused write creates nothing', async (t) => {
  const limited = await startTestApi(t, { SETTLE_RATE_LIMIT: '1/2' });
  const responses = await Promise.all(Array.from({ length: 6 }, (_, i) => limited.request('POST', '/customers', { json: { name: `R${i}` } })));
  const created = responses.filter((r) => r.status === 200).map((r) => r.body.id).sort();
  t.ok(responses.some((r) => r.status === 429), 'some were refused');
  const stored = (await limited.db('accounts').where({ type: 'customer' }).select('id')).map((r: any) => r.id).sort();
  t.same(stored, created, 'exactly the accepted creates are stored');
});

t.test('requests arriving together with an uncached key look it up once, and an unknown key is refused', async (t) => {
  const databaseUrl = await freshDatabase(t);
  const web = await startWeb(loadConfig({ LOG_LEVEL: 'silent', SETTLE_RATE_LIMIT: 'off', DATABASE_URL: databaseUrl, PORT: '0' }), { keyCacheMs: 60_000 });
  t.teardown(() => web.stop());
  const { secret } = await createTestKey(web.db, 'acme', 'test');
  let lookups = 0;
  web.db.on('query', ({ sql }) => {
    if (/from api_keys k join orgs/.test(sql)) lookups += 1;
  });
  const get = () => fetch(`${web.url}/customers`, { headers: { Authorization: `Bearer ${secret}` } });
  const answers = await Promise.all(Array.from({ length: 12 }, get));
  t.same(answers.map((res) => res.status), Array(12).fill(200));
  await Promise.all(answers.map((res) => res.arrayBuffer()));
  t.equal(lookups, 1, 'one lookup for the twelve requests');
  const unknown = await fetch(`${web.url}/customers`, { headers: { Authorization: `Bearer ${secret.slice(0, -4)}zzzz` } });
  t.equal(unknown.status, 401);
  await unknown.arrayBuffer();
});
