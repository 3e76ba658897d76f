/**
 * Reporting hardening, against the real processes' code:
 * - the change feed is pruned once mirrored, and a restart still reaches the same ClickHouse state;
 *   a mirror left behind what was pruned rebuilds instead of missing changes;
 * - a ClickHouse server too old is refused at start with one message naming both versions;
 * - reporting trouble (ClickHouse failing, the reporting process dead, failing or refusing) answers
 *   503 with its reason, never 500, and is logged once per outage, not per request;
 * - the reporting port refuses to start without REPORTING_SECRET, loopback included, and answers
 *   401 to every request that lacks it: no aggregate, request-log row or forged row for such a caller.
 * ClickHouse servers and reporting processes in trouble are impersonated by loopback HTTP servers.
 */
import tap, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { createApp } from '../api/app.ts';
import { loadConfig, projectRoot } from '../api/config.ts';
import { createDb, rows, type Db } from '../api/db/connection.ts';
import { createDomainServices } from '../api/domain.ts';
import { createTestKey } from './helpers/keys.ts';
import { formatSnapshot } from '../reporting/feed.ts';
import { startReporting } from '../reporting/main.ts';
import { versionAtLeast } from '../reporting/store.ts';
import { startTestApi, TEST_REPORTING_AUTH, TEST_REPORTING_SECRET } from './helpers/api.ts';
import { freshDatabase } from './helpers/db.ts';
import { LEAK_PATTERN, positionNow, reservePort, startTestReporting, tempDataDir, type ReportingHandle } from './reporting-support.ts';
import { eventually } from './helpers/wait.ts';

const t = tap;
const port = await reservePort();
const env = { REPORTING_URL: `http://127.0.0.1:${port}`, REPORTING_PORT: String(port), REPORTING_WAIT: '5000', REPORTING_PRUNE_INTERVAL: '0' };
const api = await startTestApi(t, env);
const dataDir = tempDataDir(t);
let reporting: ReportingHandle = await startTestReporting(t, api.databaseUrl, dataDir, env);
const [{ id: orgId }] = await rows<{ id: string }>(api.db, "select id from orgs where name = 'acme'");

// ---------- helpers ----------

let inserted = 0;
async function insertPayments(count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => `txn_hardening${String(inserted++).padStart(8, '0')}`);
  await rows(api.db, `insert into transactions (id, org_id, environment, type, data)
    select id, ?, 'test', 'payment', jsonb_build_object('amount', 100 + n, 'status', 'processed') from unnest(?::text[]) with ordinality as r(id, n)`,
  [orgId, ids]);
  return ids;
}

interface Row { id: string; status: string; count: number; 'sum(amount)': number }
const byId = (a: Row, b: Row) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Every transaction of the tenant as Postgres holds it. */
async function truth(): Promise<Row[]> {
  const found = await rows<{ id: string; status: string; amount: string }>(api.db,
    `select id, data->>'status' as status, (data->>'amount')::bigint::text as amount from transactions where org_id = ? and environment = 'test'`, [orgId]);
  return found.map((r) => ({ id: r.id, status: r.status, count: 1, 'sum(amount)': Number(r.amount) / 100 })).sort(byId);
}

/** Every transaction of the tenant as the ClickHouse mirror answers it, one row per id. */
async function mirrored(): Promise<Row[]> {
  const params = new URLSearchParams({ fields: 'id,status,count,sum(amount)', group_by: 'id,status', limit: '10000' });
  const res = await api.request('GET', `/transactions?${params}`);
  if (res.status !== 200) throw new Error(`aggregate failed: ${res.status} ${JSON.stringify(res.body)}`);
  return (res.body.values as Row[]).sort(byId);
}

async function changeRows(): Promise<number> {
  const [{ n }] = await rows<{ n: number }>(api.db, 'select count(*)::int as n from reporting_changes');
  return n;
}

function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 15_000): Promise<T> {
  return eventually(read, done, ms, 50);
}

/**
 * The change rows left once the prune has caught up (0). A prune goes only as far as the position
 * recorded in ClickHouse, which an idle mirror records every 5 s (reporting/mirror.ts,
 * IDLE_RECORD_MS): the wait allows for that, and for the prune rounds after it, on a loaded machine.
 */
function prunedAll(): Promise<number> {
  return until(changeRows, (n) => n === 0, 40_000);
}

/** A pino logger whose lines the test can read. */
function captureLog(): { log: Logger; lines: Array<Record<string, any>> } {
  const lines: Array<Record<string, any>> = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { log, lines };
}

const messages = (lines: Array<Record<string, any>>, text: string) => lines.filter((l) => String(l.msg).includes(text));

interface TestWeb {
  lines: Array<Record<string, any>>;
  get: (path: string) => Promise<{ status: number; body: any }>;
}

/** The real web app on loopback with a log the test reads, against `databaseUrl`. */
async function startWeb(t: Test, databaseUrl: string, webEnv: Record<string, string>): Promise<TestWeb> {
  const config = loadConfig({ LOG_LEVEL: 'silent', SETTLE_RATE_LIMIT: 'off', REPORTING_SECRET: TEST_REPORTING_SECRET, ...webEnv, DATABASE_URL: databaseUrl, PORT: '0' });
  const { log, lines } = captureLog();
  const db = createDb(databaseUrl, 2);
  const server = createApp({ db, config, log, domain: createDomainServices(config) }, { keyCacheMs: 0 }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await db.destroy();
  });
  const key = (await createTestKey(db, 'acme', 'test')).secret;
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    lines,
    get: async (p) => {
      const res = await fetch(url + p, { headers: { Authorization: `Basic ${Buffer.from(`${key}:`).toString('base64')}` } });
      return { status: res.status, body: await res.json() };
    },
  };
}

type Mode = 'answer' | 'fail' | 'unauthorized' | 'drop';

/** A loopback HTTP server standing in for a ClickHouse server or a reporting process; `mode` says how it behaves. */
async function impersonate(t: Test, handle: (body: string, req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<{ url: string; bodies: string[] }> {
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      bodies.push(body);
      handle(body, req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, bodies };
}

/** A ClickHouse server of `version` that takes every statement and, in `fail` mode, fails queries of the mirror. */
async function fakeClickHouse(t: Test, version: string, state: { mode: Mode }) {
  return impersonate(t, (body, req, res) => {
    if (state.mode === 'drop') return void req.socket.destroy();
    if (body.includes('version()')) return void res.end(`${JSON.stringify({ version })}\n`);
    if (/^\s*SELECT/i.test(body) && !body.includes('mirror_state') && state.mode === 'fail') {
      res.writeHead(500, { 'X-ClickHouse-Exception-Code': '241' });
      return void res.end('Code: 241. DB::Exception: Memory limit (total) exceeded: would use 9.31 GiB. (MEMORY_LIMIT_EXCEEDED) (version 24.8.1.1)\n');
    }
    res.end('');
  });
}

/** Runs reporting/main.ts as its own process until it exits (or `ms` passes: then it is killed and `code` is null). */
function runReportingProcess(childEnv: Record<string, string>, ms = 20_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(projectRoot, 'reporting/main.ts')], { env: { ...process.env, LOG_LEVEL: 'info', REPORTING_SECRET: TEST_REPORTING_SECRET, ...childEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

// ---------- 1. the change feed is pruned ----------

t.test('mirrored change rows are pruned, and a restart still reaches the same ClickHouse state', async (t) => {
  const ids = await insertPayments(300);
  await rows(api.db, `update transactions set data = data || '{"status": "voided"}' where id = any(?)`, [ids.slice(0, 50)]);
  await rows(api.db, 'delete from transactions where id = any(?)', [ids.slice(50, 70)]);
  t.same(await mirrored(), await truth(), 'the mirror holds every transaction as Postgres does');

  const left = await prunedAll();
  t.equal(left, 0, 'every mirrored change row is gone from reporting_changes');
  const [follower] = await rows<{ position_xmin: string }>(api.db, 'select position_xmin::text from reporting_followers');
  t.ok(follower && BigInt(follower.position_xmin) > 0n, `the leader declared its durable position (xmin ${follower?.position_xmin})`);

  await reporting.stop();
  const [first, second] = [ids.slice(100, 110), ids.slice(110, 115)];
  await rows(api.db, `update transactions set data = data || '{"status": "voided"}', modified_at = now() where id = any(?)`, [first]);
  await rows(api.db, 'delete from transactions where id = any(?)', [second]);
  await insertPayments(20);
  t.equal(await changeRows(), 35, 'changes made while no mirror runs stay in the feed, pruned rows included');

  reporting = await startTestReporting(t, api.databaseUrl, dataDir, env);
  t.same(await mirrored(), await truth(), 'after the restart: updated, deleted and new transactions all as Postgres has them');
  const copied = reporting.running.mirror()!.status.rowsMirrored;
  t.ok(copied <= 35, `resumed from the recorded position (${copied} rows copied), not a full copy`);
  t.equal(await prunedAll(), 0, 'and those are pruned in turn');
});

t.test('a mirror whose position is older than what was pruned rebuilds instead of missing changes', async (t) => {
  await reporting.stop();
  const [hidden] = await insertPayments(1);
  // What another target's leader (or a forgotten one) would have done: pruned past this mirror,
  // every change row gone and the mark past every one of them (the snapshot's xmax: its xmin can
  // be held back by any open transaction of the cluster, to no later than this mirror's own).
  await rows(api.db, `with gone as (delete from reporting_changes returning 1)
    update reporting_pruned set below = pg_snapshot_xmax(pg_current_snapshot())`);
  t.equal(await changeRows(), 0, `the change of ${hidden} is gone from the feed`);
  reporting = await startTestReporting(t, api.databaseUrl, dataDir, env);
  const after = await mirrored();
  t.ok(after.some((row) => row.id === hidden), 'the transaction whose change was pruned is mirrored');
  t.same(after, await truth(), 'and the mirror equals Postgres');
});

t.test('a prune that cannot go on holds no pass back: writes are answered meanwhile', async (t) => {
  reporting = await startTestReporting(t, api.databaseUrl, dataDir, env);
  await insertPayments(5);
  t.same(await mirrored(), await truth(), 'the mirror is up to date');
  // Each prune batch raises reporting_pruned.below; with that row locked elsewhere the prune waits.
  const blocker = await api.db.transaction();
  try {
    await blocker.raw('select below from reporting_pruned for update');
    const waiting = await until(async () => (await rows<{ n: number }>(api.db,
      "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%reporting_pruned%'"))[0].n, (n) => n > 0);
    t.ok(waiting > 0, 'the prune is waiting on the locked row');
    for (let round = 1; round <= 3; round += 1) {
      await insertPayments(2);
      t.same(await mirrored(), await truth(), `new payments are in the answer while the prune waits (round ${round})`);
    }
  } finally {
    await blocker.rollback();
  }
  t.equal(await prunedAll(), 0, 'once the row is free, the prune catches up');
});

// ---------- 4. the reporting port and its secret ----------

t.test('without REPORTING_SECRET the reporting process refuses to start, on loopback too', async (t) => {
  for (const host of ['127.0.0.1', '0.0.0.0']) {
    const refusedEnv = { DATABASE_URL: api.databaseUrl, SETTLE_DATA_DIR: tempDataDir(t), REPORTING_HOST: host, REPORTING_PORT: String(await reservePort()), REPORTING_SECRET: '' };
    const run = await runReportingProcess(refusedEnv);
    t.equal(run.code, 1, `${host}: exits 1`);
    const output = (run.stdout + run.stderr).trim();
    t.equal(output.split('\n').length, 1, `one message: ${output}`);
    t.match(output, new RegExp(`REPORTING_SECRET is not set: .*${host.replaceAll('.', '\\.')}.* could read every org's transaction aggregates and request logs`));
    t.match(output, /Set REPORTING_SECRET \(the same value for the web process\), or run under `settle up`/);
    await t.rejects(startReporting(loadConfig({ ...refusedEnv, LOG_LEVEL: 'silent' })), { name: 'StartupRefused', message: /REPORTING_SECRET is not set/ }, 'the same refusal in process');
  }
});

t.test('with REPORTING_SECRET set, every request without the right bearer token is 401', async (t) => {
  await reporting.stop();
  const secret = 'reporting-secret-0123456789abcdef';
  reporting = await startTestReporting(t, api.databaseUrl, dataDir, { ...env, REPORTING_SECRET: secret });
  const url = reporting.running.url;
  const query = JSON.stringify({ tenant: { orgId, environment: 'test' }, version: 'v1', params: [['fields', 'count']], snapshot: formatSnapshot(await positionNow(api.db)) });
  const call = async (method: string, p: string, authorization?: string) => {
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (authorization !== undefined) headers.Authorization = authorization;
    const res = await fetch(url + p, { method, headers, body: method === 'POST' ? query : undefined });
    return { status: res.status, body: await res.json() as Record<string, unknown> };
  };
  const wrong = `Bearer ${secret.replace(/.$/, 'x')}`;
  for (const [method, p] of [['POST', '/query'], ['POST', '/request_logs/query'], ['POST', '/rebuild'], ['GET', '/healthz'], ['GET', '/metrics']]) {
    for (const authorization of [undefined, '', `Bearer ${secret}x`, wrong, `Basic ${secret}`, secret]) {
      const res = await call(method, p, authorization);
      t.equal(res.status, 401, `${method} ${p} with ${JSON.stringify(authorization)}`);
      t.equal(res.body.error_type, 'Unauthorized');
    }
  }
  // A forged request-log row, as a local caller would post it, is refused and never listed.
  const names = ['org_id', 'environment', 'id', 'method', 'route', 'path', 'status', 'duration_ms', 'ip', 'user_agent', 'created_at'];
  const forged = [orgId, 'test', 'req_forged', 'GET', '/customers', '/customers', 200, 1, '127.0.0.1', 'forger', '2026-11-26 08:00:00.000'];
  const ingest = await fetch(`${url}/request_logs`, { method: 'POST', headers: { 'Content-Type': 'application/x-ndjson' }, body: `${JSON.stringify(names)}\n${JSON.stringify(forged)}\n` });
  t.equal(ingest.status, 401, 'request-log ingest without the token');
  const listed = await call('POST', '/request_logs/query', `Bearer ${secret}`);
  t.equal(listed.status, 200, `request-log query with the token: ${JSON.stringify(listed.body)}`);
  t.notOk(JSON.stringify(listed.body).includes('req_forged'), 'the forged row was not stored');
  const allowed = await call('POST', '/query', `Bearer ${secret}`);
  t.equal(allowed.status, 200, 'the right token is answered');
  t.same((allowed.body.values as unknown[])[0], { count: (await truth()).length });
  const healthy = await call('GET', '/healthz', `Bearer ${secret}`);
  t.equal(healthy.status, 200, `healthz with the token: ${JSON.stringify(healthy.body)}`);

  const withSecret = await startWeb(t, api.databaseUrl, { ...env, REPORTING_SECRET: secret });
  const answered = await withSecret.get('/transactions?fields=count');
  t.equal(answered.status, 200, `a web process with the secret is answered: ${JSON.stringify(answered.body)}`);
  const refused = await api.request('GET', '/transactions?fields=count');
  t.equal(refused.status, 503, 'a web process without it answers 503, not the reporting 401: the client\'s key was fine');
  t.match(refused.body, { object: 'error', error_type: 'ServiceUnavailable', error_description: /refused this server's credentials/ });
});

// ---------- 3. ClickHouse version, reporting failures ----------

t.test('versionAtLeast reads ClickHouse version texts', async (t) => {
  for (const [found, ok] of [['21.8.1.1', false], ['23.8.16.40', false], ['23.9.1', true], ['24.3.2.23', true], ['25.4.1.1', true], ['100.0', true], ['', false], ['x', false]] as const) {
    t.equal(versionAtLeast(found, [23, 9]), ok, found || '(empty)');
  }
});

t.test('a ClickHouse server too old stops the reporting process at start with one message naming both versions', async (t) => {
  const clickhouse = await fakeClickHouse(t, '21.8.1.1', { mode: 'answer' });
  const run = await runReportingProcess({
    DATABASE_URL: api.databaseUrl,
    CLICKHOUSE_URL: clickhouse.url.replace('http://', 'http://default:hunter2@'),
    REPORTING_PORT: String(await reservePort()),
    SETTLE_DATA_DIR: tempDataDir(t),
  });
  t.equal(run.code, 1, 'exits 1');
  const output = (run.stdout + run.stderr).trim();
  t.equal(output.split('\n').length, 1, `one message, no log flood: ${output}`);
  t.match(output, /ClickHouse at http:\/\/127\.0\.0\.1:\d+ is version 21\.8\.1\.1; Settle's reporting needs ClickHouse 23\.9 or later/);
  t.notMatch(output, /hunter2/, 'the password in CLICKHOUSE_URL is not shown');
  t.same(clickhouse.bodies.map((b) => b.trim().split(/\s+/).slice(0, 2).join(' ')), ['SELECT version()'], 'it asked for the version and touched nothing');
});

t.test('ClickHouse failing at query time: 503 with a reason through the API, logged once', async (t) => {
  const databaseUrl = await freshDatabase(t);
  const state: { mode: Mode } = { mode: 'answer' };
  const clickhouse = await fakeClickHouse(t, '24.8.1.1', state);
  const reportingPort = await reservePort();
  const { log, lines } = captureLog();
  const running = await startReporting(loadConfig({ DATABASE_URL: databaseUrl, CLICKHOUSE_URL: clickhouse.url, REPORTING_PORT: String(reportingPort), REPORTING_SECRET: TEST_REPORTING_SECRET, REPORTING_POLL_INTERVAL: '100', LOG_LEVEL: 'silent' }), { log, onFatal: (error) => t.fail(error.message) });
  t.teardown(() => running.stop());
  await until(async () => (await fetch(`${running.url}/healthz`, { headers: TEST_REPORTING_AUTH })).status, (status) => status === 200);
  t.equal(running.role(), 'leader', 'it leads, on the server');
  const web = await startWeb(t, databaseUrl, { REPORTING_URL: running.url, REPORTING_WAIT: '2000' });

  state.mode = 'fail';
  for (let i = 0; i < 5; i += 1) {
    const res = await web.get('/transactions?fields=count,sum(amount)');
    t.equal(res.status, 503, `query ${i + 1}: 503, not 500`);
    t.match(res.body, { object: 'error', error_type: 'ServiceUnavailable', error_description: /Reporting is unavailable: its data store failed to answer/ });
    t.notMatch(JSON.stringify(res.body), LEAK_PATTERN, 'no ClickHouse text');
  }
  state.mode = 'drop';
  const unreachable = await web.get('/transactions?fields=count');
  t.equal(unreachable.status, 503);
  t.match(unreachable.body.error_description, /its data store cannot be reached/, 'says the store cannot be reached');
  t.equal(messages(lines, 'reporting queries failing').length, 1, 'the reporting process logged the outage once, for six failed queries');
  t.equal(messages(lines, 'request failed').length, 0, 'and no line per request');

  state.mode = 'answer';
  const recovered = await web.get('/transactions?fields=count');
  t.equal(recovered.status, 200, 'answers again once ClickHouse does');
  t.equal(messages(lines, 'reporting queries recovered').length, 1, 'and says so once');
  t.equal(messages(web.lines, 'reporting unavailable').length, 1, 'the web process logged the outage once too');
});

t.test('ClickHouse unreachable at start: the process waits for it, answers 503 with the reason and logs it once', async (t) => {
  const databaseUrl = await freshDatabase(t);
  const { log, lines } = captureLog();
  // A "ClickHouse" that drops every connection it is given, counting the attempts.
  let attempts = 0;
  const dropping = net.createServer((socket) => {
    attempts += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => dropping.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => dropping.close(() => resolve())));
  const clickhouseUrl = `http://127.0.0.1:${(dropping.address() as net.AddressInfo).port}`;
  const running = await startReporting(loadConfig({ DATABASE_URL: databaseUrl, CLICKHOUSE_URL: clickhouseUrl, REPORTING_PORT: '0', REPORTING_SECRET: TEST_REPORTING_SECRET, REPORTING_POLL_INTERVAL: '50', LOG_LEVEL: 'silent' }), { log, onFatal: (error) => t.fail(error.message) });
  t.teardown(() => running.stop());
  t.ok((await until(async () => attempts, (n) => n >= 10)) >= 10, 'the process kept trying');
  const res = await fetch(`${running.url}/query`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...TEST_REPORTING_AUTH },
    body: JSON.stringify({ tenant: { orgId: 'org_x', environment: 'test' }, version: 'v1', params: [['fields', 'count']], snapshot: formatSnapshot(await positionNow(api.db)) }),
  });
  t.equal(res.status, 503);
  t.match(await res.json(), { error_type: 'ServiceUnavailable', error_description: /its data store cannot be reached/ });
  t.equal(messages(lines, 'failing').length, 1, `one line for ${attempts} failed attempts: ${JSON.stringify(lines.map((l) => l.msg))}`);
  t.match(messages(lines, 'failing')[0].msg, /^ClickHouse at http:\/\/127\.0\.0\.1:\d+ failing$/);
});

t.test('the reporting process dead, failing or refusing: 503 with a reason, never 500, logged once', async (t) => {
  const state: { mode: Mode } = { mode: 'fail' };
  const fake = await impersonate(t, (_body, req, res) => {
    if (state.mode === 'drop') return void req.socket.destroy();
    const [status, body] = state.mode === 'fail' ? [500, { object: 'error', error_type: 'InternalServerError', error_description: 'Internal server error' }]
      : state.mode === 'unauthorized' ? [401, { object: 'error', error_type: 'Unauthorized', error_description: 'Missing or invalid reporting secret' }]
      : [200, { object: 'list', values: [{ count: 0 }], reporting_position: '1:1:' }];
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  const web = await startWeb(t, api.databaseUrl, { REPORTING_URL: fake.url, REPORTING_WAIT: '1000' });
  const expected: Array<[Mode, RegExp]> = [
    ['fail', /the reporting process failed to answer \(HTTP 500\)/],
    ['unauthorized', /refused this server's credentials/],
    ['drop', /the reporting process cannot be reached/],
    ['fail', /failed to answer/],
  ];
  for (const [mode, reason] of expected) {
    state.mode = mode;
    const res = await web.get('/transactions?fields=count');
    t.equal(res.status, 503, `${mode}: 503`);
    t.match(res.body, { object: 'error', error_type: 'ServiceUnavailable', error_description: reason }, `${mode}: says why`);
  }
  t.equal(messages(web.lines, 'reporting unavailable').length, 1, 'one warning for the whole outage');
  state.mode = 'answer';
  t.equal((await web.get('/transactions?fields=count')).status, 200);
  t.equal(messages(web.lines, 'reporting available again').length, 1, 'and one line when it ends');

  const dead = await startWeb(t, api.databaseUrl, { REPORTING_URL: `http://127.0.0.1:${await reservePort()}` });
  const res = await dead.get('/transactions?fields=count&group_by=status');
  t.equal(res.status, 503, 'nothing listening at REPORTING_URL: 503');
  t.match(res.body, { object: 'error', error_type: 'ServiceUnavailable', error_description: /the reporting process cannot be reached; retry shortly/ });
});
