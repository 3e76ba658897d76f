/**
 * Leader failover between two real reporting processes (reporting/main.ts as child processes) on
 * one embedded ClickHouse data directory: the standby waits on the leader lock; when the leader is
 * killed (SIGKILL, mid-stream of changes) it takes the lock, opens the store, resumes from the
 * recorded position and answers with nothing lost. SIGTERM stops a process cleanly.
 */
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../api/config.ts';
import { createDb, rows, type Db } from '../api/db/connection.ts';
import { loadConfig } from '../api/config.ts';
import { formatSnapshot } from '../reporting/feed.ts';
import { openStore } from '../reporting/store.ts';
import { TEST_REPORTING_AUTH, TEST_REPORTING_SECRET } from './helpers/api.ts';
import { freshDatabase } from './helpers/db.ts';
import { positionNow, reservePort, tempDataDir } from './reporting-support.ts';
import { eventually } from './helpers/wait.ts';

const databaseUrl = await freshDatabase(t);
const db = createDb(databaseUrl, 2);
t.teardown(() => db.destroy());
const dataDir = tempDataDir(t);
const tenant = { orgId: 'org_failover', environment: 'test' };

let inserted = 0;
async function insertPayments(db: Db, count: number): Promise<void> {
  const ids = Array.from({ length: count }, () => `txn_failover${String(inserted++).padStart(6, '0')}`);
  await rows(db, `insert into transactions (id, org_id, environment, type, data)
    select id, ?, ?, 'payment', jsonb_build_object('amount', 100 + n, 'status', 'processed') from unnest(?::text[]) with ordinality as r(id, n)`,
  [tenant.orgId, tenant.environment, ids]);
}

async function truth(): Promise<{ count: number; sum: number }> {
  const [row] = await rows<{ count: number; total: string }>(db, `select count(*)::bigint as count, sum((data->>'amount')::bigint)::text as total from transactions where org_id = ?`, [tenant.orgId]);
  return { count: Number(row.count), sum: Number(row.total) / 100 };
}

interface Child {
  process: ChildProcess;
  url: string;
  output: string[];
}

function startChild(name: string, port: number): Child {
  const child = spawn(process.execPath, [path.join(projectRoot, 'reporting/main.ts')], {
    env: { ...process.env, DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: dataDir, REPORTING_PORT: String(port), REPORTING_SECRET: TEST_REPORTING_SECRET, REPORTING_POLL_INTERVAL: '200', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  t.comment(`${name} pid ${child.pid}`);
  return { process: child, url: `http://127.0.0.1:${port}`, output };
}

async function health(child: Child): Promise<{ status: number; body: Record<string, unknown> } | null> {
  try {
    const res = await fetch(`${child.url}/healthz`, { headers: TEST_REPORTING_AUTH });
    return { status: res.status, body: await res.json() as Record<string, unknown> };
  } catch {
    return null;
  }
}

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, ms = 20_000): Promise<T> {
  const value = await eventually(read, done, ms, 100);
  if (!done(value)) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
  return value;
}

async function totals(child: Child): Promise<{ status: number; body: any }> {
  const res = await fetch(`${child.url}/query`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...TEST_REPORTING_AUTH },
    body: JSON.stringify({ tenant, version: 'v1', params: [['fields', 'count,sum(amount)']], snapshot: formatSnapshot(await positionNow(db)) }),
  });
  return { status: res.status, body: await res.json() };
}

t.test('the standby takes over when the leader is killed, with nothing lost', async (t) => {
  await insertPayments(db, 500);
  const a = startChild('A', await reservePort());
  await until('A to lead', () => health(a), (h) => h?.status === 200 && h.body.role === 'leader');
  const b = startChild('B', await reservePort());
  const standby = await until('B to answer', () => health(b), (h) => h !== null);
  t.equal(standby?.status, 503, 'B is a standby: it cannot answer while A owns the embedded store');
  t.equal(standby?.body.role, 'standby');
  t.equal((await totals(b)).status, 503, 'and says so to a query');

  const before = await totals(a);
  t.same(before.body.values, [{ count: 500, 'sum(amount)': (await truth()).sum }], 'A answers');

  await insertPayments(db, 200);
  a.process.kill('SIGKILL');
  await insertPayments(db, 300);
  await until('B to lead', () => health(b), (h) => h?.status === 200 && h.body.role === 'leader');
  const after = await totals(b);
  const expected = await truth();
  t.equal(expected.count, 1000);
  t.same(after.body.values, [{ count: expected.count, 'sum(amount)': expected.sum }], 'B answers for every transaction, including those committed while no one led');
  const resumed = await health(b);
  t.ok(Number(resumed?.body.rows_mirrored) <= 500, `B resumed from A's recorded position (copied ${resumed?.body.rows_mirrored} rows, not all 1000)`);

  const exited = new Promise<number | null>((resolve) => b.process.once('exit', (code) => resolve(code)));
  b.process.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM: B drains and exits 0');
  t.match(b.output.join(''), /mirror resuming/, 'B logged that it resumed');
});

t.test('settle reporting rebuild with no reporting process running rebuilds in the CLI itself', async (t) => {
  const cli = spawn(process.execPath, [path.join(projectRoot, 'bin/settle.ts'), 'reporting', 'rebuild'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: dataDir, REPORTING_URL: `http://127.0.0.1:${await reservePort()}`, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  cli.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  cli.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => cli.once('exit', (c) => resolve(c)));
  t.equal(code, 0, out);
  t.match(out, /rebuild \[#+\] 100% 1,000\/1,000 rows/, 'a progress bar');
  t.match(out, /rebuilt the reporting mirror: 1000 transactions/);
  const store = openStore(loadConfig({ SETTLE_DATA_DIR: dataDir }));
  try {
    const [row] = await store.select<{ n: number }>(`SELECT count() AS n FROM ${store.table} FINAL`);
    t.equal(Number(row.n), 1000, 'the rebuilt table holds every transaction');
  } finally {
    await store.close();
  }
});

t.test('a leader whose lock connection is cut (its database restarting) beside a standby: one of the two leads again each time, with nothing lost', async (t) => {
  const a = startChild('A', await reservePort());
  await until('A to lead', () => health(a), (h) => h?.status === 200 && h.body.role === 'leader');
  const b = startChild('B', await reservePort());
  await until('B to stand by', () => health(b), (h) => h?.body.role === 'standby');
  for (let round = 1; round <= 3; round++) {
    await insertPayments(db, 50);
    await rows(db, `select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = 'settle-reporting-leader'`);
    await insertPayments(db, 50);
    const expected = await truth();
    const answered = await until(`round ${round}: a leader answering for every transaction`, async () => {
      for (const child of [a, b]) {
        const h = await health(child);
        if (h?.status === 200 && h.body.role === 'leader') return { child, totals: await totals(child) };
      }
      return null;
    }, (found) => found?.totals.status === 200 && found.totals.body.values?.[0]?.count === expected.count, 60_000);
    t.same(answered?.totals.body.values, [{ count: expected.count, 'sum(amount)': expected.sum }], `round ${round}: ${answered?.child === a ? 'A' : 'B'} leads and answers for every transaction`);
  }
  t.same([a.process.exitCode, b.process.exitCode], [null, null], 'neither process exited');
});
