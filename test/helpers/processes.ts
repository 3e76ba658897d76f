/** Project processes run as their own OS processes in tests (so a test can kill -9 them). */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import type { Test } from 'tap';
import { projectRoot } from '../../api/config.ts';
import type { Db } from '../../api/db/connection.ts';
import { freePort } from '../../api/db/embedded.ts';
import { eventually } from './wait.ts';

export interface SpawnedWorker {
  child: ChildProcess;
  /** the last 8,000 characters it printed, for a failure message */
  output: () => string;
  exited: Promise<void>;
}

/** `node workers/main.ts` with `env`; stopped (SIGTERM, then SIGKILL after 5 s) when the test ends. */
export function spawnWorker(t: Test, env: Record<string, string>): SpawnedWorker {
  return spawnScript(t, 'workers/main.ts', env);
}

/** `node api/server.ts` on a free loopback port, resolved once it listens, with its base URL. */
export async function spawnWeb(t: Test, env: Record<string, string>): Promise<SpawnedWorker & { url: string }> {
  const port = await freePort();
  const web = spawnScript(t, 'api/server.ts', { LOG_LEVEL: 'info', SETTLE_RATE_LIMIT: 'off', ...env, PORT: String(port), HOST: '127.0.0.1' });
  if (!(await eventually(() => web.output().includes('web listening'), Boolean, 30_000, 50))) throw new Error(`the web did not start:\n${web.output()}`);
  return { ...web, url: `http://127.0.0.1:${port}` };
}

export function spawnScript(t: Test, script: string, env: Record<string, string>): SpawnedWorker {
  const child = spawn(process.execPath, [path.join(projectRoot, script)], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-8000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  });
  return { child, output: () => output, exited };
}

async function announcedWorkers(db: Db): Promise<string[]> {
  return (await db.raw('select worker_id from worker_heartbeats')).rows.map((row: { worker_id: string }) => row.worker_id);
}

/**
 * `spawnWorker`, resolved once the worker has announced itself: a worker id `db` had not seen.
 * (Not a count of announcements: a new worker's first beat also deletes a dead one's, which can
 * leave fewer than before.)
 */
export async function spawnAnnouncedWorker(t: Test, db: Db, env: Record<string, string>): Promise<SpawnedWorker> {
  const before = new Set(await announcedWorkers(db));
  const worker = spawnWorker(t, env);
  const isNew = (ids: string[]) => ids.some((id) => !before.has(id));
  if (!isNew(await eventually(() => announcedWorkers(db), isNew, 30_000, 50))) throw new Error(`the worker did not start:\n${worker.output()}`);
  return worker;
}

/** Whether nothing listens on 127.0.0.1:`port`: a server of our own can bind it. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
