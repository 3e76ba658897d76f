/**
 * A PostgreSQL restart under a running reporting process (reporting/main.ts as a child process),
 * on a PostgreSQL server of this test's own so the restart disturbs no other test: the process
 * stays up, answers a query 503 while the database is down, takes the mirror lock again once it is
 * back, answers aggregates within a second, and mirrors the payments made after the restart, with
 * nothing lost and nothing copied twice.
 */
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig, projectRoot } from '../api/config.ts';
import { createDb, rows } from '../api/db/connection.ts';
import { freePort, startEmbeddedPostgres, type EmbeddedServer } from '../api/db/embedded.ts';
import { migrate } from '../api/db/migrate.ts';
import { createTestKey } from './helpers/keys.ts';
import { startWeb } from '../api/server.ts';
import { formatSnapshot } from '../reporting/feed.ts';
import { TEST_REPORTING_AUTH, TEST_REPORTING_SECRET } from './helpers/api.ts';
import { eventually } from './helpers/wait.ts';
import { positionNow, tempDataDir } from './reporting-support.ts';

const pgDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-restart-pg-'));
// As root, the server runs as a `postgres` user that must be able to enter this directory.
fs.chmodSync(pgDir, 0o755);
const pgPort = await freePort();
let postgres: EmbeddedServer | null = await startEmbeddedPostgres(pgDir, { port: pgPort });
await postgres.createDatabase('settle');
const databaseUrl = postgres.url('settle');
await migrate(databaseUrl);

const reportingPort = await freePort();
const reportingUrl = `http://127.0.0.1:${reportingPort}`;
const web = await startWeb(loadConfig({ LOG_LEVEL: 'silent', SETTLE_RATE_LIMIT: 'off', DATABASE_URL: databaseUrl, PORT: '0', REPORTING_URL: reportingUrl, REPORTING_SECRET: TEST_REPORTING_SECRET, REPORTING_WAIT: '2000' }), { keyCacheMs: 0 });
const db = createDb(databaseUrl, 2);
const dataDir = tempDataDir(t);
let reporting: ChildProcess | null = null;
let output = '';

// One teardown, in order: nothing may outlive the server it talks to.
t.teardown(async () => {
  if (reporting && reporting.exitCode === null && reporting.signalCode === null) {
    const exited = new Promise((resolve) => reporting!.once('exit', resolve));
    reporting.kill('SIGKILL');
    await exited;
  }
  await web.stop();
  await db.destroy();
  await postgres?.stop();
  fs.rmSync(pgDir, { recursive: true, force: true });
});

const key = (await createTestKey(db, 'acme', 'test')).secret;
const [{ id: orgId }] = await rows<{ id: string }>(db, "select id from orgs where name = 'acme'");

async function request(method: string, route: string, json?: unknown): Promise<{ status: number; body: any }> {
  try {
    const res = await fetch(web.url + route, {
      method,
      headers: { Authorization: `Basic ${Buffer.from(`${key}:`).toString('base64')}`, ...(json ? { 'Content-Type': 'application/json' } : {}) },
      body: json ? JSON.stringify(json) : undefined,
    });
    return { status: res.status, body: await res.json() };
  } catch (error) {
    return { status: 0, body: String(error) };
  }
}

await request('POST', '/processing_accounts', { name: 'Shop' });
const customer = (await request('POST', '/customers', { name: 'Payer', email: 'payer@example.com' })).body;
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };

async function pay(count: number, amount: number): Promise<void> {
  for (let i = 0; i < count; i += 1) {
    const res = await request('POST', '/transactions', { type: 'payment', amount, customer_id: customer.id, payment_method: CARD });
    if (res.status !== 200) throw new Error(`payment failed: ${res.status} ${JSON.stringify(res.body)}`);
  }
}

/** The tenant's payments through the web process's aggregate route (answered by reporting). */
function totals(): Promise<{ status: number; body: any }> {
  return request('GET', `/transactions?${new URLSearchParams({ fields: 'count,sum(amount)' })}`);
}

async function truth(): Promise<Array<{ count: number; 'sum(amount)': number }>> {
  const [row] = await rows<{ count: string; total: string }>(db,
    `select count(*)::bigint::text as count, sum((data->>'amount')::bigint)::text as total from transactions where org_id = ? and environment = 'test'`, [orgId]);
  return [{ count: Number(row.count), 'sum(amount)': Number(row.total) / 100 }];
}

async function health(): Promise<{ status: number; body: any } | null> {
  try {
    const res = await fetch(`${reportingUrl}/healthz`, { headers: TEST_REPORTING_AUTH });
    return { status: res.status, body: await res.json() };
  } catch {
    return null;
  }
}

/** The reporting process's JSON log lines so far. */
function logLines(): Array<{ msg: string; pid: number }> {
  return output.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
}

const running = () => reporting !== null && reporting.exitCode === null && reporting.signalCode === null;

t.test('the reporting process rides out a PostgreSQL restart: same pid, answers within a second, mirrors new payments', async (t) => {
  reporting = spawn(process.execPath, [path.join(projectRoot, 'reporting/main.ts')], {
    env: { ...process.env, DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: dataDir, REPORTING_PORT: String(reportingPort), REPORTING_SECRET: TEST_REPORTING_SECRET, REPORTING_POLL_INTERVAL: '200', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => reporting!.once('exit', (code) => resolve(code)));
  reporting.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  reporting.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const pid = reporting.pid!;
  t.comment(`reporting pid ${pid}`);
  const leading = await eventually(health, (h) => h?.status === 200 && h.body.role === 'leader', 20_000, 50);
  t.equal(leading?.body.role, 'leader', 'the reporting process leads');

  await pay(5, 12.5);
  const before = await totals();
  t.equal(before.status, 200, 'the aggregate answers', { body: before.body });
  t.same(before.body.values, await truth(), 'the aggregate counts the payments made before the restart');

  const staleSnapshot = formatSnapshot(await positionNow(db));
  const restartedAt = performance.now();
  await postgres!.stop();
  postgres = null;
  // Down until the process has tried to reconnect and failed, not for a fixed time.
  const retried = await eventually(async () => logLines().some((line) => line.msg === 'leader election failing'), (seen) => seen || !running(), 5000);
  t.ok(retried && running(), 'while PostgreSQL is down the reporting process retries the lock and stays up', { output: output.slice(-3000) });
  const noticed = await health();
  t.equal(noticed?.status, 503, 'its health check answers 503', { body: noticed?.body });
  const down = await fetch(`${reportingUrl}/query`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...TEST_REPORTING_AUTH },
    body: JSON.stringify({ tenant: { orgId, environment: 'test' }, version: 'v1', params: [['fields', 'count']], snapshot: staleSnapshot }),
  }).then(async (res) => ({ status: res.status, body: await res.json() as any }), (error: unknown) => ({ status: 0, body: String(error) }));
  t.equal(down.status, 503, 'a query while PostgreSQL is down is a 503');
  t.match(down.body.error_description, /retry shortly/, `with a reason: ${down.body.error_description}`);

  postgres = await startEmbeddedPostgres(pgDir, { port: pgPort });
  const backAt = performance.now();
  const first = await eventually(totals, (res) => res.status === 200, 10_000);
  const answeredAt = performance.now();
  t.equal(first.status, 200, 'an aggregate answers again', { body: first.body, output: output.slice(-3000) });
  const sinceBack = Math.round(answeredAt - backAt);
  t.comment(`restart to first aggregate answered: ${Math.round(answeredAt - restartedAt)} ms (PostgreSQL down ${Math.round(backAt - restartedAt)} ms; ${sinceBack} ms after it accepted connections again)`);
  t.ok(sinceBack < 1000, `aggregates answer within a second of PostgreSQL being back (${sinceBack} ms)`);
  t.ok(running(), 'the reporting process did not exit');
  const resumedBy = logLines().filter((line) => line.msg === 'mirror resuming').map((line) => line.pid);
  t.same(resumedBy, [pid], `the mirror resumed in the same process, pid ${pid}`);

  await pay(3, 7.25);
  const after = await totals();
  t.equal(after.status, 200, 'the aggregate answers', { body: after.body });
  t.same(after.body.values, await truth(), 'payments made after the restart are counted at once (read-your-writes), with every earlier one');
  t.equal(after.body.values?.[0]?.count, 8, 'five payments before the restart and three after');
  const [{ n }] = await rows<{ n: string }>(db, 'select count(*)::bigint::text as n from transactions');
  const resumed = await health();
  t.equal(resumed?.body.role, 'leader', 'it leads again');
  t.equal(resumed?.body.rows_mirrored, Number(n), 'it resumed from its recorded position: each transaction was copied once');
  t.equal(logLines().filter((line) => /copying every transaction/.test(line.msg)).length, 1, 'the mirror was filled once, at the first start, not rebuilt after the restart');

  reporting!.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM still drains and exits 0');
});
