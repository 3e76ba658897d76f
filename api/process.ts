/**
 * What every process entry point shares (web `api/server.ts`, worker `workers/main.ts`, reporting
 * `reporting/main.ts`): how it stops. Configuration is `api/config.ts`, logging `api/logger.ts`.
 * Nothing here knows HTTP, so the worker and reporting processes need nothing of the web process.
 */

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
