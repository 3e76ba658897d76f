/**
 * Supervision in `settle up`: the restart policy on small scripts, then a real `settle up` (its own
 * embedded PostgreSQL, data directory and ports) whose children are killed with SIGKILL, and last
 * `settle up` itself killed with SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { projectRoot } from '../api/config.ts';
import { freePort } from '../api/db/embedded.ts';
import { WEB_NODE_FLAGS } from '../api/process.ts';
import { processRunning as isRunning } from '../bin/runtime.ts';
import { KILL_GRACE_MS, restartDelay, Supervisor, type SupervisorOptions } from '../bin/supervisor.ts';
import { runSettle } from './helpers/cli.ts';
import { portFree } from './helpers/processes.ts';
import { eventually } from './helpers/wait.ts';

const DRAIN_MS = 3000;
/** what stopping may take beyond the children's drain and kill grace: the database's shutdown */
const STOP_MARGIN_MS = 3000;

/** The first truthy answer of `read` within `ms`, else its last answer. */
function until<T>(read: () => T | Promise<T>, ms: number): Promise<T> {
  return eventually(async () => read(), Boolean, ms, 50);
}

function temporaryDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  // As root, the embedded server runs as a `postgres` user that must be able to enter it.
  fs.chmodSync(dir, 0o755);
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('restart delays double from 0.5 s up to a 30 s cap', async (t) => {
  t.same([0, 1, 2, 3, 4, 5, 6, 7, 8, 50].map((n) => restartDelay(n)), [500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000, 30_000], 'ms before restarts 1 to 9 and 51');
});

t.test('the supervisor on small scripts', async (t) => {
  const dir = temporaryDir('settle-supervisor-');
  // EXIT_AFTER_MS: exit with code 3 that long after starting (else run until stopped); IGNORE_SIGTERM: refuse to drain.
  fs.writeFileSync(path.join(dir, 'child.mjs'), `
    if (process.env.IGNORE_SIGTERM) process.on('SIGTERM', () => console.log('ignoring SIGTERM'));
    if (process.env.EXIT_AFTER_MS) setTimeout(() => process.exit(3), Number(process.env.EXIT_AFTER_MS));
    else setInterval(() => {}, 1000);
    console.log('child up');
  `);
  const supervise = (env: Record<string, string>, options: Partial<SupervisorOptions> = {}) => {
    const lines: string[] = [];
    const supervisor = new Supervisor([{ name: 'child', script: 'child.mjs' }], {
      root: dir,
      env: { PATH: process.env.PATH, ...env },
      drainTimeoutMs: 100,
      killGraceMs: 200,
      backoff: { initialMs: 50, maxMs: 200, resetAfterMs: 10_000 },
      print: (line) => lines.push(line),
      ...options,
    });
    t.teardown(() => supervisor.stop());
    supervisor.start();
    const delays = () => lines.flatMap((line) => /restarting in ([\d.]+) s/.exec(line)?.[1] ?? []).map(Number);
    return { supervisor, lines, delays };
  };

  t.test('a child that keeps crashing is restarted after doubling delays up to the cap', async (t) => {
    const { supervisor, lines, delays } = supervise({ EXIT_AFTER_MS: '0' });
    t.ok(await until(() => delays().length >= 5, 10_000), 'five restarts', { lines });
    await supervisor.stop();
    t.same(delays().slice(0, 5), [0.05, 0.1, 0.2, 0.2, 0.2], 'delays in seconds');
    t.match(lines.join('\n'), /child exited \(code 3\) after [\d.]+ s; restarting in 0.05 s \(restart 1\)/, 'the reason and the delay are logged');
  });

  t.test('a child that stayed up past the reset time is restarted after the first delay again', async (t) => {
    const { supervisor, lines, delays } = supervise({ EXIT_AFTER_MS: '400' }, { backoff: { initialMs: 50, maxMs: 200, resetAfterMs: 300 } });
    t.ok(await until(() => delays().length >= 3, 10_000), 'three restarts', { lines });
    await supervisor.stop();
    t.same(delays().slice(0, 3), [0.05, 0.05, 0.05], 'delays in seconds');
  });

  t.test('stopping kills a child that ignores SIGTERM once the drain timeout and grace have passed', async (t) => {
    const { supervisor, lines } = supervise({ IGNORE_SIGTERM: '1' });
    t.ok(await until(() => lines.some((line) => line.includes('child up')), 5000), 'the child runs', { lines });
    const pid = supervisor.pids().child;
    const started = Date.now();
    await supervisor.stop();
    const took = Date.now() - started;
    t.ok(took >= 300 && took < 1500, `stopped after ${took} ms`);
    t.notOk(isRunning(pid), 'the child is gone');
    t.match(lines.join('\n'), /still running 0.3 s after SIGTERM; sending SIGKILL/, 'the kill is logged');
  });

  t.test('stopping cancels a restart that is waiting out its delay', async (t) => {
    // The test is the restart clock: a restart runs when the test says its delay has passed.
    const restarts: Array<{ run: () => void; delayMs: number; cancelled: boolean }> = [];
    const scheduleRestart = (run: () => void, delayMs: number) => {
      const restart = { run, delayMs, cancelled: false };
      restarts.push(restart);
      return () => void (restart.cancelled = true);
    };
    const { supervisor, lines } = supervise({ EXIT_AFTER_MS: '0' }, { scheduleRestart });
    t.ok(await until(() => restarts.length === 1, 5000), 'a restart is pending', { lines });
    t.equal(restarts[0].delayMs, 50, 'after the first delay');
    await supervisor.stop();
    for (const restart of restarts) if (!restart.cancelled) restart.run();
    t.equal(lines.filter((line) => line.includes('child started')).length, 1, 'no start after stop, once its delay has passed');
    t.same(supervisor.pids(), {}, 'no child runs');
  });
});

interface SettleUp {
  process: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

interface Runtime {
  pid: number;
  databaseUrl: string;
  reportingSecret?: string;
  children: Record<string, number>;
}

t.test('settle up', async (t) => {
  const dataDir = temporaryDir('settle-up-');
  const port = await freePort();
  const apiUrl = `http://127.0.0.1:${port}`;
  const runtime = (): Runtime | undefined => {
    try {
      return JSON.parse(fs.readFileSync(path.join(dataDir, 'runtime.json'), 'utf8'));
    } catch {
      return undefined;
    }
  };
  const postgresPid = () => Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const running: SettleUp[] = [];
  // A failed assertion must not leave processes behind: whatever still runs is killed.
  t.teardown(async () => {
    const leftover = [...running.filter((up) => up.process.exitCode === null && up.process.signalCode === null).map((up) => up.process.pid!), ...Object.values(runtime()?.children ?? {})];
    for (const pid of leftover) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
    if (fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')) && isRunning(postgresPid())) process.kill(postgresPid(), 'SIGQUIT');
  });

  const reportingPort = await freePort();
  /** `ownGroup`: like a terminal's foreground job, so a signal can reach it and the PostgreSQL it starts at once. */
  const start = async (ownGroup = false): Promise<SettleUp> => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      SETTLE_DATA_DIR: dataDir,
      PORT: String(port),
      REPORTING_PORT: String(reportingPort),
      SETTLE_SHUTDOWN_TIMEOUT: String(DRAIN_MS),
      SETTLE_PROCESSING_DELAY: '50',
      WORKER_POLL_INTERVAL: '100',
      LOG_LEVEL: 'info',
    };
    delete env.DATABASE_URL;
    delete env.REPORTING_URL;
    delete env.REPORTING_SECRET;
    const child = spawn(process.execPath, [path.join(projectRoot, 'bin/settle.ts'), 'up'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: ownGroup });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const up = { process: child, output: () => output, exited: new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code))) };
    running.push(up);
    return up;
  };
  const apiAnswers = () => fetch(`${apiUrl}/healthz`).then((r) => r.status === 200, () => false);
  const secret = () => fs.readFileSync(path.join(dataDir, 'test-secret-key'), 'utf8').trim();
  const api = async (method: string, route: string, json?: unknown) => {
    const response = await fetch(apiUrl + route, {
      method,
      headers: { Authorization: `Basic ${Buffer.from(`${secret()}:`).toString('base64')}`, 'X-API-Version': 'v2', ...(json ? { 'Content-Type': 'application/json' } : {}) },
      body: json ? JSON.stringify(json) : undefined,
    });
    return { status: response.status, body: await response.json() as any };
  };
  /** Waits for the named child to be running under a pid other than `before`. */
  const replaced = (name: string, before: number) => until(() => {
    const pid = runtime()?.children[name];
    return pid && pid !== before ? pid : undefined;
  }, 10_000);

  const first = await start();
  t.ok(await until(apiAnswers, 30_000), 'the API answers', { output: first.output() });
  t.ok(await until(() => ['web', 'worker', 'reporting'].every((name) => runtime()?.children[name]), 5000), 'runtime.json lists the web, worker and reporting pids');
  const webArgs = fs.readFileSync(`/proc/${runtime()!.children.web}/cmdline`, 'utf8').split('\0');
  t.ok(WEB_NODE_FLAGS.every((flag) => webArgs.includes(flag)), `web runs with its V8 flags (${webArgs.join(' ')})`);
  const packageScripts = JSON.parse(fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8')).scripts as Record<string, string>;
  t.ok(WEB_NODE_FLAGS.every((flag) => packageScripts.web.split(' ').includes(flag)), 'and so does npm run web (the Procfile\'s)');

  t.test('a web process killed with SIGKILL is restarted and the API answers again', async (t) => {
    const web = runtime()!.children.web;
    process.kill(web, 'SIGKILL');
    const next = await replaced('web', web);
    t.ok(next, 'a new web pid is published');
    t.ok(await until(apiAnswers, 30_000), 'the API answers again');
    t.equal((await api('GET', '/customers')).status, 200, 'an authenticated request succeeds');
    t.match(first.output(), /settle +\| web exited \(signal SIGKILL\) after [\d.]+ s; restarting in 0.5 s \(restart 1\)/, 'the restart is logged with its reason and delay');
  });

  t.test('a worker killed with SIGKILL is restarted and runs the jobs that follow a payment', async (t) => {
    const worker = runtime()!.children.worker;
    process.kill(worker, 'SIGKILL');
    t.ok(await replaced('worker', worker), 'a new worker pid is published');
    const receiver = (await api('POST', '/processing_accounts', { name: 'Shop' })).body;
    const sender = (await api('POST', '/customers', { name: 'Payer', email: 'payer@example.com' })).body;
    // The sandbox bank refuses an account number starting 000 a moment after processing: a worker job.
    const bank = { type: 'bank_account', bank_account: { account_number: '000123456', routing_number: '036001808', account_type: 'checking' } };
    const payment = await api('POST', '/transactions', { type: 'payment', amount: 20, sender: { account_id: sender.id, method: bank }, receiver: { account_id: receiver.id } });
    t.equal(payment.status, 200, 'the payment is accepted', { body: payment.body });
    t.equal(payment.body.status.value, 'processed', 'processed in its own answer');
    const rejected = await until(async () => (await api('GET', `/transactions/${payment.body.id}`)).body.status.value === 'rejected', 10_000);
    t.ok(rejected, 'the restarted worker runs the bank\'s later refusal');
  });

  t.test('a reporting process killed with SIGKILL is restarted and aggregate queries answer again', async (t) => {
    const reporting = runtime()!.children.reporting;
    process.kill(reporting, 'SIGKILL');
    t.ok(await replaced('reporting', reporting), 'a new reporting pid is published');
    const answered = await until(async () => {
      const response = await api('GET', '/transactions?fields=count(id)');
      return response.status === 200 && response.body.values?.[0]?.['count(id)'] >= 1 ? response.body : undefined;
    }, 30_000);
    t.ok(answered, 'the restarted reporting process answers (and has mirrored the payment above)');
  });

  t.test('the reporting port answers no caller without the secret settle up made for its children', async (t) => {
    const reportingUrl = `http://127.0.0.1:${reportingPort}`;
    const made = runtime()!.reportingSecret;
    t.match(made, /^[\w-]{43}$/, 'settle up made a secret and shares it through its runtime file');
    t.equal(fs.statSync(path.join(dataDir, 'runtime.json')).mode & 0o077, 0, 'which only its owner may read');
    const query = JSON.stringify({ tenant: { orgId: 'org_any', environment: 'test' }, version: 'v1', params: [['fields', 'count']], snapshot: '1:1:' });
    const names = ['org_id', 'environment', 'id', 'method', 'route', 'path', 'status', 'duration_ms', 'ip', 'user_agent', 'created_at'];
    const forged = `${JSON.stringify(names)}\n${JSON.stringify(['org_any', 'test', 'req_forged', 'GET', '/customers', '/customers', 200, 1, '127.0.0.1', 'x', '2026-11-26 08:00:00.000'])}\n`;
    for (const [route, type, body] of [['/query', 'application/json', query], ['/request_logs/query', 'application/json', query], ['/request_logs', 'application/x-ndjson', forged]]) {
      const res = await fetch(reportingUrl + route, { method: 'POST', headers: { 'Content-Type': type }, body });
      t.equal(res.status, 401, `POST ${route} without the secret: 401`);
    }
    t.equal((await api('GET', '/transactions?fields=count(id)')).status, 200, 'the API, holding it, is answered');
    const rebuilt = await runSettle(runtime()!.databaseUrl, ['reporting', 'rebuild'], { SETTLE_DATA_DIR: dataDir, REPORTING_PORT: String(reportingPort), REPORTING_SECRET: '' });
    t.equal(rebuilt.code, 0, rebuilt.stderr);
    t.match(rebuilt.stdout, /by the reporting process at/, 'settle reporting rebuild reaches the running process with the secret of this data directory');
  });

  t.test('SIGTERM stops settle up, every child and the embedded PostgreSQL within the drain timeout', async (t) => {
    const pids = { settle: first.process.pid!, ...runtime()!.children, postgres: postgresPid() };
    const started = Date.now();
    first.process.kill('SIGTERM');
    const code = await first.exited;
    const took = Date.now() - started;
    t.equal(code, 0, 'settle up exits 0');
    t.ok(took < DRAIN_MS + KILL_GRACE_MS + STOP_MARGIN_MS, `stopped in ${took} ms`);
    for (const [name, pid] of Object.entries(pids)) t.notOk(isRunning(pid), `${name} (pid ${pid}) is gone`);
    t.notOk(runtime(), 'runtime.json is removed');
  });

  t.test('a fresh settle up on the same data directory starts, and stops while a child waits to restart', async (t) => {
    const second = await start();
    t.ok(await until(apiAnswers, 30_000), 'the API answers', { output: second.output() });
    t.ok(await until(() => runtime()?.children.reporting && /worker running/.test(second.output()), 10_000), 'the worker and reporting processes run', { output: second.output() });
    const children = runtime()!.children;
    const pids = { settle: second.process.pid!, ...children, postgres: postgresPid() };
    process.kill(children.web, 'SIGKILL');
    t.ok(await until(() => /web exited \(signal SIGKILL\).*restarting in/.test(second.output()), 5000), 'the web process waits out its restart delay');
    const started = Date.now();
    // Back to back, so the second arrives while the first is being handled.
    second.process.kill('SIGTERM');
    second.process.kill('SIGINT');
    const code = await second.exited;
    const took = Date.now() - started;
    t.equal(code, 0, 'settle up exits 0 despite the second signal');
    t.ok(took < DRAIN_MS + KILL_GRACE_MS + STOP_MARGIN_MS, `stopped in ${took} ms`);
    for (const [name, pid] of Object.entries(pids)) t.notOk(isRunning(pid), `${name} (pid ${pid}) is gone`);
    t.match(second.output(), /(SIGTERM|SIGINT) received; already stopping/, 'the second signal is acknowledged');
    t.notMatch(second.output().split(/received; stopping/)[1] ?? '', /web started/, 'the web process is not restarted during shutdown');
    t.match(second.output(), /worker +\| .*SIGTERM received, draining/, "the children's last lines are printed");
  });

  t.test('settle up keeps supervising after its output pipe closes, and SIGHUP stops it', async (t) => {
    const third = await start();
    t.ok(await until(apiAnswers, 30_000), 'the API answers', { output: third.output() });
    t.ok(await until(() => runtime()?.children.reporting, 10_000), 'the reporting process runs');
    // As when `settle up | tee log` loses its tee: every line it writes from now on meets EPIPE.
    third.process.stdout!.destroy();
    third.process.stderr!.destroy();
    const children = runtime()!.children;
    const pids = { settle: third.process.pid!, ...children, postgres: postgresPid() };
    process.kill(children.web, 'SIGKILL');
    const web = await replaced('web', children.web);
    t.ok(web, 'a new web pid is published');
    t.ok(await until(apiAnswers, 30_000), 'the API answers again');
    const started = Date.now();
    third.process.kill('SIGHUP');
    t.equal(await third.exited, 0, 'settle up exits 0');
    t.ok(Date.now() - started < DRAIN_MS + KILL_GRACE_MS + STOP_MARGIN_MS, `stopped in ${Date.now() - started} ms`);
    for (const [name, pid] of Object.entries({ ...pids, web: web! })) t.notOk(isRunning(pid), `${name} (pid ${pid}) is gone`);
  });

  t.test('Ctrl-C stops everything even when the embedded PostgreSQL has stopped already', async (t) => {
    const fourth = await start(true);
    t.ok(await until(apiAnswers, 30_000), 'the API answers', { output: fourth.output() });
    t.ok(await until(() => runtime()?.children.reporting, 10_000), 'the reporting process runs');
    const pids = { settle: fourth.process.pid!, ...runtime()!.children, postgres: postgresPid() };
    // A terminal's Ctrl-C reaches the postmaster too, and it may finish its fast shutdown first.
    process.kill(pids.postgres, 'SIGINT');
    t.ok(await until(() => !isRunning(pids.postgres), 10_000), 'PostgreSQL has stopped');
    const started = Date.now();
    process.kill(-fourth.process.pid!, 'SIGINT');
    t.equal(await fourth.exited, 0, 'settle up exits 0', { output: fourth.output() });
    t.ok(Date.now() - started < DRAIN_MS + KILL_GRACE_MS + STOP_MARGIN_MS, `stopped in ${Date.now() - started} ms`);
    for (const [name, pid] of Object.entries(pids)) t.notOk(isRunning(pid), `${name} (pid ${pid}) is gone`);
    t.notOk(runtime(), 'runtime.json is removed');
  });

  t.test('settle up killed with SIGKILL takes its children and the embedded PostgreSQL with it, and frees the port', async (t) => {
    const fifth = await start();
    t.ok(await until(apiAnswers, 30_000), 'the API answers', { output: fifth.output() });
    t.ok(await until(() => runtime()?.children.reporting, 10_000), 'the reporting process runs');
    const children = runtime()!.children;
    const postgres = postgresPid();
    process.kill(fifth.process.pid!, 'SIGKILL');
    await fifth.exited;
    const stillRunning = (pids: Record<string, number>) => async () => Object.entries(pids).filter(([, pid]) => isRunning(pid)).map(([name]) => name);
    // Each child sees its parent gone at once and drains; idle, that takes well under a second.
    t.same(await eventually(stillRunning(children), (names) => names.length === 0, 5000), [], 'web, worker and reporting are gone');
    t.ok(await eventually(() => portFree(port), Boolean, 2000), `the API port ${port} is free`);
    t.same(await eventually(stillRunning({ postgres }), (names) => names.length === 0, 10_000), [], 'PostgreSQL is gone');
    t.notOk(await eventually(async () => runtime(), (left) => !left, 2000), 'runtime.json is removed');
  });
});
