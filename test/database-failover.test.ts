/**
 * A DATABASE_URL naming several hosts (CONTRACT §26): processes connect to the host that accepts
 * writes and, when it is lost, find the new primary without a restart. Proved on two real
 * servers — an embedded primary and its synchronous streaming standby, the primary killed with
 * kill -9 and the standby promoted under a running web, worker and reporting — and on hosts of the test
 * server behind proxies (the first host down; the CLI).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import t, { type Test } from 'tap';
import { createDb, rows } from '../api/db/connection.ts';
import { createTestKey } from './helpers/keys.ts';
import { migrate } from '../api/db/migrate.ts';
import { primaryUrl } from '../api/db/primary.ts';
import { formatSnapshot } from '../reporting/feed.ts';
import { freePort, startEmbeddedPair } from '../api/db/embedded.ts';
import { startTestApi, startTestWorker, TEST_REPORTING_AUTH, TEST_REPORTING_SECRET } from './helpers/api.ts';
import { spawnScript } from './helpers/processes.ts';
import { runSettle } from './helpers/cli.ts';
import { freshDatabase } from './helpers/db.ts';
import { startReceiver } from './helpers/receiver.ts';
import { startTcpProxy } from './helpers/tcpProxy.ts';
import { eventually } from './helpers/wait.ts';
import { positionNow, startTestReporting, tempDataDir } from './reporting-support.ts';

const customer = (name: string) => ({ json: { name, email: `${name.toLowerCase()}@example.com` } });

function twoHosts(url: string, first: number, second: number): string {
  return url.replace(/@[^/]+\//, `@127.0.0.1:${first},127.0.0.1:${second}/`);
}

t.test('with the first host down, the web, the worker and the CLI use the second', async (t) => {
  const database = await freshDatabase(t);
  const down = await startTcpProxy(t, Number(new URL(database).port || 5432));
  await down.close();
  const up = await startTcpProxy(t, Number(new URL(database).port || 5432));
  const url = twoHosts(database, down.port, up.port);
  const migrated = await runSettle(url, ['migrate']);
  t.equal(migrated.code, 0, `settle migrate takes the URL: ${migrated.stderr}`);
  const api = await startTestApi(t, {}, {}, url);
  const created = await api.request('POST', '/customers', customer('Second'));
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.equal((await api.request('GET', `/customers/${created.body.id}`)).status, 200);
});

t.test('with no host answering, the error names every host of the URL', async (t) => {
  const [a, b] = [await freePort(), await freePort()];
  await t.rejects(primaryUrl(`postgres://u:p@127.0.0.1:${a},127.0.0.1:${b}/settle`), { code: '08001', message: `No host of the database URL accepts writes (127.0.0.1:${a}, 127.0.0.1:${b})` });
});

/** The log lines of a spawned process that say `message` (pino's JSON lines). */
function logged(output: string, message: string): Array<Record<string, unknown>> {
  return output.split('\n').filter((line) => line.includes(`"msg":"${message}"`)).map((line) => JSON.parse(line.slice(line.indexOf('{'))));
}

/** The reporting process as its own OS process, on a free loopback port, with an embedded store. */
async function reportingEnv(t: Test, url: string): Promise<Record<string, string>> {
  return { DATABASE_URL: url, LOG_LEVEL: 'info', REPORTING_SECRET: TEST_REPORTING_SECRET, REPORTING_HOST: '127.0.0.1', REPORTING_PORT: String(await freePort()), SETTLE_DATA_DIR: tempDataDir(t) };
}

t.test('a web, a worker and a reporting process started while no host of the URL accepts writes wait for one (logged once, naming the hosts), and serve once one does', async (t) => {
  const database = await freshDatabase(t);
  const [down, later] = [await startTcpProxy(t, Number(new URL(database).port || 5432)), await startTcpProxy(t, Number(new URL(database).port || 5432))];
  await down.close();
  await later.close();
  const url = twoHosts(database, down.port, later.port);
  const port = await freePort();
  const web = spawnScript(t, 'api/server.ts', { DATABASE_URL: url, LOG_LEVEL: 'info', SETTLE_RATE_LIMIT: 'off', PORT: String(port), HOST: '127.0.0.1' });
  const worker = spawnScript(t, 'workers/main.ts', { DATABASE_URL: url, LOG_LEVEL: 'info' });
  const reporting = spawnScript(t, 'reporting/main.ts', await reportingEnv(t, url));
  const all = [['web', web], ['worker', worker], ['reporting', reporting]] as const;
  for (const [name, started] of all) {
    t.ok(await eventually(() => started.output().includes('waiting for the database'), Boolean, 30_000, 50), `the ${name} waits: ${started.output()}`);
  }
  t.notOk(reporting.output().includes('reporting listening'), 'the reporting port opens only once the database answers');
  await later.open();
  t.ok(await eventually(() => web.output().includes('web listening'), Boolean, 30_000, 50), `the web listens once the database answers: ${web.output()}`);
  t.ok(await eventually(() => reporting.output().includes('mirror leader'), Boolean, 60_000, 50), `the reporting process leads the mirror once the database answers: ${reporting.output()}`);
  const db = createDb(database, 1);
  t.teardown(() => db.destroy());
  const key = await createTestKey(db, 'Waited', 'test');
  const created = await fetch(`http://127.0.0.1:${port}/customers`, {
    method: 'POST',
    headers: { Authorization: `Basic ${Buffer.from(`${key.secret}:`).toString('base64')}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'Waited Wes' }),
  });
  t.equal(created.status, 200, 'the web serves');
  const beats = await eventually(async () => (await rows<{ n: number }>(db, 'select count(*)::int as n from worker_heartbeats'))[0]!.n, (n) => n > 0, 30_000, 100);
  t.ok(beats > 0, `the worker runs: ${worker.output()}`);
  t.same([web.child.exitCode, worker.child.exitCode, reporting.child.exitCode], [null, null, null], 'none exited');
  for (const [name, started] of all) {
    const waits = logged(started.output(), 'waiting for the database');
    t.equal(waits.length, 1, `the ${name} said once that it waits: ${started.output()}`);
    t.same(waits[0]?.hosts, [`127.0.0.1:${down.port}`, `127.0.0.1:${later.port}`], `the ${name} named the hosts`);
    t.equal(logged(started.output(), 'database reached').length, 1, `the ${name} said when it reached the database`);
  }
});

t.test('a start (web, worker, reporting) waits for the database SETTLE_DATABASE_WAIT at most, then exits 1; stopped while it waits, it exits 0', async (t) => {
  const [a, b] = [await freePort(), await freePort()];
  const url = `postgres://postgres@127.0.0.1:${a},127.0.0.1:${b}/settle`;
  const bounded = spawnScript(t, 'workers/main.ts', { DATABASE_URL: url, LOG_LEVEL: 'info', SETTLE_DATABASE_WAIT: '2s' });
  t.equal(await eventually(() => bounded.child.exitCode, (code) => code !== null, 60_000, 100), 1, `the worker gave up: ${bounded.output()}`);
  t.equal(logged(bounded.output(), 'waiting for the database').length, 1, 'after saying once that it waits');
  t.match(bounded.output(), `worker: the database could not be reached in 2 s (SETTLE_DATABASE_WAIT): No host of the database URL accepts writes (127.0.0.1:${a}, 127.0.0.1:${b})`, 'and why it gave up');

  const port = await freePort();
  const stopped = spawnScript(t, 'api/server.ts', { DATABASE_URL: url, LOG_LEVEL: 'info', PORT: String(port), HOST: '127.0.0.1', SETTLE_DATABASE_WAIT: '10m' });
  t.ok(await eventually(() => stopped.output().includes('waiting for the database'), Boolean, 30_000, 50), `the web waits: ${stopped.output()}`);
  stopped.child.kill('SIGTERM');
  t.equal(await eventually(() => stopped.child.exitCode, (code) => code !== null, 30_000, 100), 0, `SIGTERM ends the wait: ${stopped.output()}`);

  const reportingBounded = spawnScript(t, 'reporting/main.ts', { ...(await reportingEnv(t, url)), SETTLE_DATABASE_WAIT: '2s' });
  t.equal(await eventually(() => reportingBounded.child.exitCode, (code) => code !== null, 60_000, 100), 1, `the reporting process gave up: ${reportingBounded.output()}`);
  t.equal(logged(reportingBounded.output(), 'waiting for the database').length, 1, 'after saying once that it waits');
  t.match(reportingBounded.output(), `reporting: the database could not be reached in 2 s (SETTLE_DATABASE_WAIT): No host of the database URL accepts writes (127.0.0.1:${a}, 127.0.0.1:${b})`, 'and why it gave up');
  const reportingStopped = spawnScript(t, 'reporting/main.ts', { ...(await reportingEnv(t, url)), SETTLE_DATABASE_WAIT: '10m' });
  t.ok(await eventually(() => reportingStopped.output().includes('waiting for the database'), Boolean, 30_000, 50), `the reporting process waits: ${reportingStopped.output()}`);
  reportingStopped.child.kill('SIGTERM');
  t.equal(await eventually(() => reportingStopped.child.exitCode, (code) => code !== null, 30_000, 100), 0, `SIGTERM ends the reporting process's wait: ${reportingStopped.output()}`);
});

t.test('hosts that all refuse writes are a 503 with Retry-After, and writes resume when one takes them', async (t) => {
  const database = await freshDatabase(t);
  const port = Number(new URL(database).port || 5432);
  const [a, b] = [await startTcpProxy(t, port), await startTcpProxy(t, port)];
  const api = await startTestApi(t, {}, {}, twoHosts(database, a.port, b.port));
  const admin = new pg.Client(database);
  await admin.connect();
  t.teardown(() => admin.end());
  const name = new URL(database).pathname.slice(1);
  await admin.query(`alter database ${name} set default_transaction_read_only = on`);
  a.cut();
  b.cut();
  const refused = await api.request('POST', '/customers', customer('Refused'));
  t.equal(refused.status, 503, JSON.stringify(refused.body));
  t.match(refused.headers.get('Retry-After'), /^\d+$/);
  await admin.query(`alter database ${name} reset default_transaction_read_only`);
  const written = await eventually(() => api.request('POST', '/customers', customer('Resumed')), (r) => r.status === 200, 10_000, 100);
  t.equal(written.status, 200, 'writes resume without a restart');
});

t.test('the primary killed (kill -9) and the standby promoted: a running web, worker and reporting follow it, nothing acknowledged is lost', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-pair-'));
  // As root the servers run as the `postgres` user, which must be able to enter it.
  fs.chmodSync(dataDir, 0o755);
  const pair = await startEmbeddedPair(dataDir);
  let primaryKilled = false;
  t.teardown(async () => {
    // A killed server's stop() would wait for an exit that happened already.
    if (!primaryKilled) await pair.primary.stop();
    await pair.standby.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const bootstrap = new pg.Client(pair.primary.url('postgres'));
  await bootstrap.connect();
  await bootstrap.query('create database settle');
  await bootstrap.end();
  await migrate(pair.url('settle'));
  const api = await startTestApi(t, { SETTLE_DB_POOL: '4' }, {}, pair.url('settle'));
  await startTestWorker(t, pair.url('settle'), { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50', WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,300ms' });
  const reporting = await startTestReporting(t, pair.url('settle'), tempDataDir(t), { REPORTING_PORT: '0' });
  const db = createDb(pair.url('settle'), 2);
  t.teardown(() => db.destroy());
  const tenant = { orgId: 'org_failover', environment: 'test' };
  let inserted = 0;
  const insertPayments = (count: number) => rows(db, `insert into transactions (id, org_id, environment, type, data)
    select id, ?, ?, 'payment', jsonb_build_object('amount', 100, 'status', 'processed') from unnest(?::text[]) as r(id)`,
  [tenant.orgId, tenant.environment, Array.from({ length: count }, () => `txn_failover${String(inserted++).padStart(6, '0')}`)]);
  /** The mirror's count of the tenant's payments, as of everything committed now on the primary. */
  const mirrored = async () => {
    const response = await fetch(`${reporting.running.url}/query`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...TEST_REPORTING_AUTH },
      body: JSON.stringify({ tenant, version: 'v1', params: [['fields', 'count']], snapshot: formatSnapshot(await positionNow(db)) }),
    }).catch(() => null);
    return response?.status === 200 ? ((await response.json()) as { values: Array<{ count: number }> }).values[0]?.count : null;
  };
  await insertPayments(50);
  t.equal(await eventually(mirrored, (n) => n === 50, 30_000, 200), 50, 'the mirror has the payments before the failover');
  const receiver = await startReceiver(t);
  t.equal((await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: receiver.url } })).status, 200);
  const eventOf = async (name: string) => {
    const account = await api.request('POST', '/processing_accounts', { json: { name } });
    t.equal(account.status, 200, `processing account ${name}`);
    return account.body.id as string;
  };
  const deliveredFor = (id: string) => eventually(() => receiver.received.filter((r) => r.body.includes(id)).length, (n) => n > 0, 30_000, 100);
  t.ok(await deliveredFor(await eventOf('Delivered before')), 'a webhook is delivered before the failover');

  const before = await api.request('POST', '/customers', customer('Before'));
  t.equal(before.status, 200, 'written through the primary');
  const standby = new pg.Client(pair.standby.url('settle'));
  await standby.connect();
  t.teardown(() => standby.end());
  t.same((await standby.query(`select count(*)::int as n from accounts where id = $1`, [before.body.id])).rows, [{ n: 1 }], 'the standby has it: the commit waited for it');

  const postmaster = Number(fs.readFileSync(path.join(pair.primary.databaseDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  process.kill(postmaster, 'SIGKILL');
  primaryKilled = true;
  const during = await api.request('POST', '/customers', customer('During'));
  // A backend of the killed postmaster can still finish a write on its open connection (it sees the
  // postmaster gone only when it next waits), its commit confirmed by the standby: then it is
  // acknowledged and must be there after the promotion.
  t.ok(during.status === 503 || during.status === 200, `no primary: 503 or an acknowledged write, never 500 (${during.status} ${JSON.stringify(during.body)})`);
  if (during.status === 503) t.match(during.headers.get('Retry-After'), /^\d+$/);

  const promoted = Date.now();
  await standby.query('select pg_promote()');
  const after = await eventually(() => api.request('POST', '/customers', customer('After')), (r) => r.status === 200, 20_000, 100);
  t.comment(`first write answered ${Date.now() - promoted} ms after pg_promote() was sent (a figure, not a bound)`);
  t.equal(after.status, 200, 'the same web process writes to the promoted standby');
  t.equal((await api.request('GET', `/customers/${before.body.id}`)).status, 200, 'what was acknowledged before the kill is there');
  if (during.status === 200) t.equal((await api.request('GET', `/customers/${during.body.id}`)).status, 200, 'what was acknowledged as the primary died is there');
  t.ok(await deliveredFor(await eventOf('Delivered after')), "the same worker's dispatch and delivery follow the new primary");
  await insertPayments(30);
  t.equal(await eventually(mirrored, (n) => n === 80, 30_000, 200), 80, 'the same reporting process mirrors what the new primary holds');
});
