/**
 * The embedded PostgreSQL that `settle up` starts would outlive a `settle up` that is killed
 * (SIGKILL, a crash): the postmaster does not watch its parent. This small process does.
 * `settle up` starts it with an IPC channel that closes when `settle up` ends, however it ends.
 * If the postmaster still runs then, nobody stopped it: the guard waits for the children to drain
 * (they see their parent gone too, bin/exitWithParent.ts), stops the postmaster with a fast
 * shutdown (SIGINT, as `settle up` would) and removes the stale runtime.json.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../api/config.ts';
import { chooseLineView } from './logLines.ts';
import { allExited, postmasterPid, processRunning, readRuntime, runtimeFile } from './runtime.ts';
import { KILL_GRACE_MS } from './supervisor.ts';

/** How long the postmaster's fast shutdown may take before it is told to quit at once (SIGQUIT). */
const FAST_SHUTDOWN_MS = 15_000;

/** Starts the guard of the embedded PostgreSQL running now; call it once the server is up. */
export function guardDatabase(): void {
  const guard = spawn(process.execPath, [fileURLToPath(import.meta.url)], {
    env: process.env,
    // Its own session, like the children: a terminal's Ctrl-C or hang-up does not reach it.
    detached: true,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  // Neither the process nor the channel keeps `settle up` running.
  guard.unref();
  guard.channel?.unref();
}

async function stopOrphanedDatabase(settleUp: number, postmaster: number, dataDir: string, drainMs: number): Promise<void> {
  if (!processRunning(postmaster) || postmasterPid(dataDir) !== postmaster) return;
  const runtime = readRuntime(dataDir);
  const children = runtime?.pid === settleUp ? Object.values(runtime.children) : [];
  process.stderr.write(chooseLineView(process.env, process.stderr)('postgres', `settle up (pid ${settleUp}) ended without stopping the embedded PostgreSQL (pid ${postmaster}); stopping it once its children have drained`) + '\n');
  await allExited(children, drainMs);
  process.kill(postmaster, 'SIGINT');
  if (!(await allExited([postmaster], FAST_SHUTDOWN_MS))) process.kill(postmaster, 'SIGQUIT');
  if (runtime?.pid === settleUp) fs.rmSync(runtimeFile(dataDir), { force: true });
}

if (import.meta.main) {
  const config = loadConfig();
  const settleUp = process.ppid;
  const postmaster = postmasterPid(config.dataDir);
  // Output nobody reads any more (a closed terminal) must not end the guard.
  process.stderr.on('error', () => {});
  // Listening keeps the guard alive until the channel closes; with no postmaster it just ends.
  if (postmaster !== null) {
    process.once('disconnect', () => {
      stopOrphanedDatabase(settleUp, postmaster, config.dataDir, config.shutdownTimeoutMs + KILL_GRACE_MS).then(() => process.exit(0), () => process.exit(1));
    });
  }
}
