/**
 * `npm start` and a `settle up` run through npx stop cleanly when a process manager (systemd, a
 * container runtime) sends SIGTERM to the process it started — npm, not a whole process group as
 * a terminal's Ctrl-C does (CONTRACT §26): every process of the tree drains and exits, none is
 * left holding the port or the database.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { projectRoot } from '../api/config.ts';
import { freePort } from '../api/db/embedded.ts';
import { processRunning, readRuntime } from '../bin/runtime.ts';
import { freshDatabase } from './helpers/db.ts';
import { portFree } from './helpers/processes.ts';
import { eventually } from './helpers/wait.ts';

const projectBin = path.join(projectRoot, 'node_modules');
// The machine's npm, as a process manager would run it (test/run.ts puts the project's bin first).
const machinePath = (process.env.PATH ?? '').split(path.delimiter).filter((dir) => !dir.startsWith(projectBin)).join(path.delimiter);

/** `npm <args>` in the project, started as a process manager starts a service, killed with everything it left when the test ends. */
async function npmService(t: Test, args: string[]) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-npm-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env, PATH: machinePath, DATABASE_URL: await freshDatabase(t), SETTLE_DATA_DIR: dataDir, PORT: String(port),
    REPORTING_URL: 'off', SETTLE_SHUTDOWN_TIMEOUT: '2000', npm_config_update_notifier: 'false', npm_config_offline: 'true',
  };
  const npm = spawn('npm', args, { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  npm.stdout!.on('data', (d) => (output += d));
  npm.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));
  const tree = () => {
    const runtime = readRuntime(dataDir);
    return runtime ? [npm.pid!, runtime.pid, ...Object.values(runtime.children)] : [npm.pid!];
  };
  let pids: number[] = [];
  t.teardown(async () => {
    for (const pid of pids.filter(processRunning)) process.kill(pid, 'SIGKILL');
    await exited;
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const answering = await eventually(() => fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status === 200, () => false), Boolean, 60_000, 100);
  if (!answering) throw new Error(`settle up did not start:\n${output}`);
  pids = await eventually(tree, (all) => all.length >= 4, 10_000);
  return { npm, port, pids, output: () => output, exited };
}

for (const args of [['start'], ['exec', '-c', 'node bin/settle.ts up']]) {
  t.test(`SIGTERM to npm's own process (npm ${args.join(' ')}) stops settle up and every child it started`, async (t) => {
    const service = await npmService(t, args);
    t.equal(service.pids.length, 4, 'npm, settle up, web and worker run');
    service.npm.kill('SIGTERM');
    const left = await eventually(() => service.pids.filter(processRunning), (running) => running.length === 0, 30_000, 100);
    t.same(left, [], `no process of the tree is left (output:\n${service.output().slice(-2000)})`);
    t.match(service.output(), /SIGTERM received; stopping/, 'settle up drained as on its own SIGTERM');
    t.equal(await portFree(service.port), true, 'the port is free again');
  });
}
