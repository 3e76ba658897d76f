import { spawn } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { projectRoot } from '../api/config.ts';
import { freePort } from '../api/db/embedded.ts';
import { runSettle, type CliRun } from './helpers/cli.ts';
import { freshDatabase } from './helpers/db.ts';
import { eventually } from './helpers/wait.ts';

const databaseUrl = await freshDatabase(t);

type Run = CliRun;

const settle = (args: string[], env: Record<string, string> = {}): Promise<Run> => runSettle(databaseUrl, args, env);

t.test('settle keys: create prints the key once, list shows only prefixes, revoke shuts it out', async (t) => {
  const created = await settle(['keys', 'create', '--org', 'cli-org', '--env', 'test', '--authorize-and-capture']);
  t.equal(created.code, 0, created.stderr);
  const secret = created.stdout.trim();
  t.match(secret, /^test_secret_key_[0-9A-Za-z]{32}$/);
  const listed = await settle(['keys', 'list']);
  t.equal(listed.code, 0);
  t.match(listed.stdout, /cli-org/);
  t.notMatch(listed.stdout, new RegExp(secret), 'the full key is never shown again');
  t.match(listed.stdout, /"authorize_and_capture":true/);
  const prefix = secret.slice(0, secret.length - 24);
  const other = await settle(['keys', 'create', '--org', 'other-cli-org', '--env', 'test']);
  const ambiguous = await settle(['keys', 'revoke', 'test_secret_key_']);
  t.not(ambiguous.code, 0, 'a prefix naming several keys fails');
  t.match(ambiguous.stderr, /2 active keys match test_secret_key_; nothing revoked/);
  t.equal(other.code, 0, other.stderr);
  const stillActive = (await settle(['keys', 'list'])).stdout.split('\n').filter((line) => line.split('\t')[4] === 'active');
  t.equal(stillActive.length, 2, 'no key was revoked');
  const revoked = await settle(['keys', 'revoke', prefix]);
  t.equal(revoked.code, 0, revoked.stderr);
  t.match(revoked.stdout, /revoked 1 key/);
  t.match((await settle(['keys', 'list'])).stdout, /revoked/);
});

t.test('settle: bad arguments get a clear message and exit 2', async (t) => {
  for (const args of [['keys', 'create', '--org', 'x'], ['keys', 'create', '--env', 'prod', '--org', 'x'], ['keys', 'create', '--bogus'], ['frobnicate'], ['keys', 'revoke']]) {
    const run = await settle(args);
    t.equal(run.code, 2, args.join(' '));
    t.match(run.stderr, /^settle: .+\n\nusage: settle/, `${args.join(' ')}: ${run.stderr.split('\n')[0]}`);
  }
  t.equal((await settle(['migrate'])).code, 0, 'migrate on an up-to-date database is fine');
});

t.test('web and worker processes drain and exit 0 on SIGTERM', async (t) => {
  const port = await freePort();
  const env = { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), LOG_LEVEL: 'info', REPORTING_SECRET: '' };
  for (const [script, ready] of [['api/server.ts', 'web listening'], ['workers/main.ts', 'worker running']]) {
    const child = spawn(process.execPath, [path.join(projectRoot, script)], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await eventually(() => output.includes(ready), Boolean, 15_000, 50);
    t.match(output, ready, `${script} started`);
    if (script === 'api/server.ts') t.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200, 'web answers /healthz');
    if (script === 'api/server.ts') t.match(output, /REPORTING_SECRET is not set: the reporting process refuses this web process/, 'web started without the reporting secret says so');
    const started = Date.now();
    child.kill('SIGTERM');
    t.equal(await exited, 0, `${script} exits 0`);
    t.ok(Date.now() - started < 10_000, `${script} stopped within 10 s`);
  }
});
