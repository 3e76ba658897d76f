/**
 * The `web` process: serves the API against DATABASE_URL. On SIGTERM it stops accepting,
 * lets in-flight requests finish (up to SETTLE_SHUTDOWN_TIMEOUT) and exits 0.
 */
import http, { type Server } from 'node:http';
import { createApp } from './app.ts';
import { initMetrics } from './metrics.ts';
import { loadConfig, type Config } from './config.ts';
import { createDb, type Db } from './db/connection.ts';
import { DatabaseWaitOver, waitForDatabase } from './db/health.ts';
import { createLogger } from './logger.ts';
import { createDomainServices } from './domain.ts';
import { withRandomSource } from './ids.ts';
import { runUntilSignalled } from './process.ts';
import { openVault, VaultKeyRefused } from './vaultKeys.ts';
import type { Seams } from './seams.ts';
import { setDatabaseSilence } from './db/silence.ts';
import { applyWriteSettings } from './db/writeSettings.ts';

export interface RunningWeb {
  server: Server;
  db: Db;
  url: string;
  stop: () => Promise<void>;
}

export interface WebOptions {
  /** how long an API key's lookup is cached (default: the auth layer's own) */
  keyCacheMs?: number;
  /** what a test replaces (api/seams.ts); the real clock, random source and sandbox processor when absent */
  seams?: Partial<Seams>;
  /** aborted when the process is told to stop: ends a wait for the database at start */
  stopping?: AbortSignal;
}

export async function startWeb(config: Config, options: WebOptions = {}): Promise<RunningWeb> {
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set (use `settle up` to run with an embedded database)');
  const log = createLogger(config.logLevel, 'web');
  applyWriteSettings(config);
  setDatabaseSilence(config.databaseSilenceMs);
  const db = createDb(config.databaseUrl, config.dbPoolSize);
  let draining = false;
  let vault;
  try {
    await waitForDatabase(db, log, { url: config.databaseUrl, waitMs: config.databaseWaitMs, stopping: options.stopping });
    vault = await openVault(config, db, log);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  const domain = createDomainServices(config, options.seams, vault);
  initMetrics();
  const app = createApp({ db, config, log, domain }, { keyCacheMs: options.keyCacheMs, isDraining: () => draining });
  const handle = app.callback();
  const random = options.seams?.random;
  // Every request mints its ids and secrets from the given source (api/ids.ts).
  const server = http.createServer(random ? (req, res) => withRandomSource(random, () => handle(req, res)) : handle);
  server.listen(config.port, config.host);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const url = `http://${config.host}:${port}`;
  log.info({ url }, 'web listening');
  if (config.reportingUrl !== null && !config.reportingSecret) {
    log.warn({ reporting: config.reportingUrl }, 'REPORTING_SECRET is not set: the reporting process refuses this web process (aggregates answer 503, request logs are not stored); set the same value on both, or REPORTING_URL=off');
  }
  const stop = async () => {
    draining = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const timer = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
    await closed;
    clearTimeout(timer);
    await db.destroy();
  };
  return { server, db, url, stop };
}

if (import.meta.main) {
  await runUntilSignalled('web', (stopping) => startWeb(loadConfig(), { stopping }), (error) => error instanceof VaultKeyRefused || error instanceof DatabaseWaitOver);
}
