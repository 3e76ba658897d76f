/**
 * A request the database fails under, for a reason of the database and not of the request, is a
 * 503 in the error format with `Retry-After`, never a 500 (CONTRACT §26): the connection cut
 * mid-query (the machine died), nothing listening, the backend terminated by an administrator,
 * and a server that only reads (a standby, or a primary fenced during a failover).
 */
import pg from 'pg';
import t, { type Test } from 'tap';
import { startTestApi, type ApiResponse, type TestApi } from './helpers/api.ts';
import { freshDatabase } from './helpers/db.ts';
import { startTcpProxy } from './helpers/tcpProxy.ts';
import { eventually } from './helpers/wait.ts';

function assertUnavailable(t: Test, response: ApiResponse): void {
  t.equal(response.status, 503, `503, not ${response.status}: ${JSON.stringify(response.body)}`);
  t.equal(response.body?.object, 'error');
  t.equal(response.body?.error_type, 'ServiceUnavailable');
  t.match(response.headers.get('Retry-After'), /^[1-9]\d*$/, 'Retry-After says when to come back');
}

/** A client of the test's own, not one of the web's pool: the one doing things to the web's backends. */
async function operator(t: Test, url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: 'operator' });
  await client.connect();
  t.teardown(() => client.end());
  return client;
}

/**
 * Holds the API keys table so every authenticated request waits on its first query, and resolves
 * once `count` of the web's backends are waiting: then the test does its damage.
 */
async function holdRequests(t: Test, url: string, count: number): Promise<{ release: () => Promise<void>; waiting: () => Promise<number[]> }> {
  const holder = await operator(t, url);
  // Activity is read outside the holder's transaction, which would see one snapshot of it throughout.
  const watcher = await operator(t, url);
  await holder.query('begin');
  await holder.query('lock table api_keys in access exclusive mode');
  const waiting = async () => (await watcher.query(
    `select pid from pg_stat_activity where datname = current_database() and application_name = 'settle' and wait_event_type = 'Lock'`,
  )).rows.map((row: { pid: number }) => row.pid);
  return {
    release: async () => void await holder.query('rollback'),
    waiting: async () => eventually(waiting, (pids) => pids.length >= count, 10_000),
  };
}

const customer = { json: { name: 'Ada', email: 'ada@example.com' } };

t.test('a connection cut under a running query (the database host died) is a 503 with Retry-After', async (t) => {
  const database = await freshDatabase(t);
  const proxy = await startTcpProxy(t, Number(new URL(database).port || 5432));
  const api: TestApi = await startTestApi(t, {}, {}, proxy.urlThrough(database));
  t.equal((await api.request('GET', '/customers')).status, 200, 'the API answers through the proxy');
  const held = await holdRequests(t, database, 2);
  const pending = [api.request('POST', '/customers', customer), api.request('GET', '/customers')];
  await held.waiting();
  proxy.cut();
  const answers = await Promise.all(pending);
  await held.release();
  for (const answer of answers) assertUnavailable(t, answer);
  t.equal((await api.request('GET', '/customers')).status, 200, 'the next request reconnects and succeeds');
});

t.test('a database nobody listens for (connection refused) is a 503 with Retry-After', async (t) => {
  const database = await freshDatabase(t);
  const proxy = await startTcpProxy(t, Number(new URL(database).port || 5432));
  const api = await startTestApi(t, {}, {}, proxy.urlThrough(database));
  await proxy.close();
  assertUnavailable(t, await api.request('POST', '/customers', customer));
  assertUnavailable(t, await api.request('GET', '/customers'));
  await proxy.open();
  t.equal((await api.request('GET', '/customers')).status, 200, 'back as soon as the server is');
});

t.test('a backend terminated by an administrator (57P01) under a request is a 503 with Retry-After', async (t) => {
  const api = await startTestApi(t);
  const admin = await operator(t, api.databaseUrl);
  const held = await holdRequests(t, api.databaseUrl, 2);
  const pending = [api.request('POST', '/customers', customer), api.request('GET', '/customers')];
  for (const pid of await held.waiting()) await admin.query('select pg_terminate_backend($1)', [pid]);
  const answers = await Promise.all(pending);
  await held.release();
  for (const answer of answers) assertUnavailable(t, answer);
  t.equal((await api.request('GET', '/customers')).status, 200);
});

t.test('a server that only reads (25006) refuses a write with a 503 and Retry-After, and reads go on', async (t) => {
  const api = await startTestApi(t);
  const admin = await operator(t, api.databaseUrl);
  const database = new URL(api.databaseUrl).pathname.slice(1);
  t.equal((await api.request('GET', '/customers')).status, 200);
  await admin.query(`alter database ${database} set default_transaction_read_only = on`);
  // Sessions take the database's settings when they start: the web's must start again.
  await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = 'settle'`);
  assertUnavailable(t, await api.request('POST', '/customers', customer));
  const read = await eventually(() => api.request('GET', '/customers'), (r) => r.status === 200);
  t.equal(read.status, 200, 'reads are answered');
  t.same(read.body.values, [], 'nothing was written');
  await admin.query(`alter database ${database} reset default_transaction_read_only`);
  await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = 'settle'`);
  t.equal((await eventually(() => api.request('POST', '/customers', customer), (r) => r.status < 300)).status, 200, 'writes again once the server takes them');
});
