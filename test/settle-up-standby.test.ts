/**
 * `settle up --standby` (CONTRACT §26): an embedded primary with a synchronous streaming standby
 * and every process on a connection string naming both, so a developer can try a failover on one
 * machine: the primary killed with kill -9, the standby promoted, the API answers again by itself.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { projectRoot } from '../api/config.ts';
import { freePort } from '../api/db/embedded.ts';
import { hostUrls } from '../api/db/primary.ts';
import { processRunning, readRuntime } from '../bin/runtime.ts';
import { eventually } from './helpers/wait.ts';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-standby-'));
// As root the servers run as the `postgres` user, which must be able to enter it.
fs.chmodSync(dataDir, 0o755);
t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));

t.test('settle up --standby survives kill -9 of its primary once the standby is promoted, and stops everything on SIGTERM', async (t) => {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, SETTLE_DATA_DIR: dataDir, PORT: String(port), REPORTING_URL: 'off', SETTLE_SHUTDOWN_TIMEOUT: '2000' };
  delete env.DATABASE_URL;
  const up = spawn(process.execPath, [path.join(projectRoot, 'bin/settle.ts'), 'up', '--standby'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  up.stdout!.on('data', (d) => (output += d));
  up.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => up.once('exit', (code) => resolve(code)));
  t.teardown(async () => {
    if (up.exitCode === null) up.kill('SIGTERM');
    await exited;
  });
  const api = `http://127.0.0.1:${port}`;
  const started = await eventually(() => fetch(`${api}/healthz`).then((r) => r.status === 200, () => false), Boolean, 90_000, 200);
  t.ok(started, `settle up --standby answers (output:\n${output.slice(-2000)})`);
  const key = fs.readFileSync(path.join(dataDir, 'test-secret-key'), 'utf8').trim();
  const headers = { Authorization: `Basic ${Buffer.from(`${key}:`).toString('base64')}`, 'Content-Type': 'application/json' };
  const create = (name: string) => fetch(`${api}/customers`, { method: 'POST', headers, body: JSON.stringify({ name }) });
  const before = await create('Before');
  t.equal(before.status, 200);
  const { id } = await before.json() as { id: string };

  const runtime = readRuntime(dataDir)!;
  const [, standbyUrl] = hostUrls(runtime.databaseUrl);
  t.ok(standbyUrl, 'the processes were given both hosts');
  const postmaster = Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  process.kill(postmaster, 'SIGKILL');
  const standby = new pg.Client(standbyUrl);
  await standby.connect();
  await standby.query('select pg_promote()');
  await standby.end();
  const after = await eventually(() => create('After'), (r) => r.status === 200, 30_000, 200);
  t.equal(after.status, 200, 'the running web writes to the promoted standby');
  t.equal((await fetch(`${api}/customers/${id}`, { headers })).status, 200, 'the customer acknowledged before the kill is there');

  const tree = [runtime.pid, ...Object.values(runtime.children)];
  up.kill('SIGTERM');
  t.equal(await exited, 0, 'settle up stops on SIGTERM');
  t.same(tree.filter(processRunning), [], 'no process of it is left');
  const standbyPostmaster = path.join(dataDir, 'standby', 'postgres', 'postmaster.pid');
  t.notOk(fs.existsSync(standbyPostmaster) && processRunning(Number(fs.readFileSync(standbyPostmaster, 'utf8').split('\n')[0])), 'the promoted standby was stopped too');
});
