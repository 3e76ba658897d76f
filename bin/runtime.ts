/**
 * What a running `settle up` publishes in its data directory (runtime.json: its pid, database and
 * children), and the checks on the processes it names: read by the CLI's other commands and by
 * bin/databaseGuard.ts.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface Runtime {
  pid: number;
  databaseUrl: string;
  /** the REPORTING_SECRET its children share (the file is readable by its owner only) */
  reportingSecret?: string;
  /** pids of the web, worker and reporting processes running now */
  children: Record<string, number>;
}

export function runtimeFile(dataDir: string): string {
  return path.join(dataDir, 'runtime.json');
}

export function readRuntime(dataDir: string): Runtime | undefined {
  try {
    return JSON.parse(fs.readFileSync(runtimeFile(dataDir), 'utf8')) as Runtime;
  } catch {
    return undefined;
  }
}

export function processRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return !exitedUncollected(pid);
}

/**
 * An orphan that exited answers kill(pid, 0) until its new parent collects it, which an init
 * process of a container may never do; Linux shows it in state Z.
 */
function exitedUncollected(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

/** The pid of the embedded PostgreSQL in `dataDir`, while its pid file is there. */
export function postmasterPid(dataDir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** Resolves true once none of `pids` runs, or false after `ms`. */
export async function allExited(pids: number[], ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (!pids.some(processRunning)) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
