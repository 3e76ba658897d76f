/**
 * What a person sees of `settle up`: in a terminal (a pseudo-terminal from util-linux `script`),
 * short lines with the level in colour; into a pipe, every process's JSON records as written.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { projectRoot } from '../api/config.ts';
import { freePort } from '../api/db/embedded.ts';
import { processRunning, readRuntime } from '../bin/runtime.ts';
import { eventually } from './helpers/wait.ts';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-terminal-'));
// As root, the embedded server runs as a `postgres` user that must be able to enter it.
fs.chmodSync(dataDir, 0o755);
const port = await freePort();

function quoted(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}

/** `settle up` (web and worker) on this file's data directory, in a terminal or into a pipe, stopped when the test ends. */
function settleUp(t: Test, terminal: boolean) {
  const command = [process.execPath, path.join(projectRoot, 'bin/settle.ts'), 'up'];
  const [file, args] = terminal ? ['script', ['-qefc', `exec ${command.map(quoted).join(' ')}`, '/dev/null']] : [command[0], command.slice(1)];
  const env: NodeJS.ProcessEnv = { ...process.env, SETTLE_DATA_DIR: dataDir, PORT: String(port), REPORTING_URL: 'off', SETTLE_SHUTDOWN_TIMEOUT: '2000', LOG_LEVEL: 'info' };
  for (const name of ['DATABASE_URL', 'LOG_FORMAT', 'NO_COLOR']) delete env[name];
  const child = spawn(file, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async () => {
    const runtime = readRuntime(dataDir);
    if (runtime && processRunning(runtime.pid)) process.kill(runtime.pid, 'SIGTERM');
    else if (child.exitCode === null) child.kill('SIGTERM');
    return exited;
  };
  t.teardown(stop);
  /** Its output once the worker runs and the web process has answered a request and logged it. */
  const afterARequest = async () => {
    await eventually(() => fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status === 200, () => false), Boolean, 30_000);
    return eventually(async () => output, (text) => /GET.*\/healthz/.test(text) && /worker running/.test(text), 10_000);
  };
  return { afterARequest, stop };
}

t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));

t.test('in a terminal, settle up prints short lines: time, process, level in colour, message and the fields that matter', async (t) => {
  const up = settleUp(t, true);
  const output = await up.afterARequest();
  t.match(output, /^\d\d:\d\d:\d\d web {7}\x1b\[32mINFO \x1b\[0m request GET \/healthz 200 \d+ ms\r?$/m, 'a request line', { output });
  t.match(output, /^\d\d:\d\d:\d\d worker {4}\x1b\[32mINFO \x1b\[0m worker running concurrency=\d+/m, "the worker's start");
  t.match(output, /^\d\d:\d\d:\d\d settle {4} {6}web started \(pid \d+\)/m, "the supervisor's own line");
  t.notMatch(output, /"level":/, 'no JSON record');
  t.equal(await up.stop(), 0, 'settle up stops on SIGTERM');
});

t.test('into a pipe, settle up prints each JSON record as written behind its process label', async (t) => {
  const up = settleUp(t, false);
  const output = await up.afterARequest();
  const request = /^web {6}\| (\{.*"msg":"request".*\})$/m.exec(output);
  t.ok(request, 'a labelled JSON request record', { output });
  t.match(JSON.parse(request![1]), { level: 30, name: 'web', method: 'GET', path: '/healthz', status: 200 }, 'with its fields');
  t.notMatch(output, /\x1b\[/, 'no colour');
  t.equal(await up.stop(), 0, 'settle up stops on SIGTERM');
});
