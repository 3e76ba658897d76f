/**
 * What every process entry point shares (web `api/server.ts`, worker `workers/main.ts`, reporting
 * `reporting/main.ts`): how it stops. Configuration is `api/config.ts`, logging `api/logger.ts`.
 * Nothing here knows HTTP, so the worker and reporting processes need nothing of the web process.
 */

/**
 * V8 flags of the web process, however it is started (`npm run web`, `settle up`, the benchmarks):
 * a young generation of 8 MB per semi-space, from the start and at most.
 * - At most: left to itself, V8 grows it to several times that under a long export's steady
 *   allocation, and the process keeps the memory: a 300k-row CSV export grew the web process by
 *   202 MB with the default, 84 MB with this (bench:exports).
 * - From the start: growing from 1 MB under a sudden load, the young generation promoted the
 *   requests then in flight, and some processes stayed in a state that promoted about a megabyte
 *   every scavenge, with a full collection every second or two: 15–20 % fewer get-by-id requests
 *   a second than a process that did not. Of two processes started together and loaded in turn,
 *   the second one did so in 13 of 16 starts, the first in 1. Starting at 8 MB, none of 10 did.
 */
export const WEB_NODE_FLAGS = ['--max-semi-space-size=8', '--min-semi-space-size=8'];

/** On the first SIGTERM or SIGINT: log, run `stop` (drain in-flight work), exit 0, or 1 if stopping failed. */
export function exitOnSignals(stop: () => Promise<void>, log: (message: string) => void): void {
  let stopping = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      log(`${signal} received, draining`);
      stop().then(() => process.exit(0), () => process.exit(1));
    });
  }
}

/**
 * A process's start, stopped on the first SIGTERM or SIGINT even when it comes during the start:
 * one still waiting for its database (`stopping` aborted) ends there and exits 0; one further on
 * is let finish and then stopped, so it leaves nothing behind (a worker takes its ids off the
 * heartbeat list). An error `refused` says is the operator's to fix (a refused vault key, a
 * database not reached in time) is its message alone, and exit 1.
 */
export async function runUntilSignalled(
  name: string,
  start: (stopping: AbortSignal) => Promise<{ stop: () => Promise<void> }>,
  refused: (error: unknown) => boolean,
): Promise<void> {
  const stopping = new AbortController();
  const started = start(stopping.signal);
  exitOnSignals(async () => {
    stopping.abort();
    await (await started.catch(() => null))?.stop();
  }, (message) => console.error(message));
  await started.catch((error: unknown) => {
    // Stopped while it waited: the signal's handler exits.
    if (stopping.signal.aborted) return;
    if (!refused(error)) throw error;
    console.error(`${name}: ${(error as Error).message}`);
    process.exit(1);
  });
}
