/**
 * The `reporting` process: mirrors transactions into ClickHouse and answers transaction
 * aggregates for the web process.
 *
 * Roles. The process that holds the leader lock (reporting/leader.ts) mirrors; the others retry the
 * lock every REPORTING_POLL_INTERVAL (at least a second). With a ClickHouse server a standby answers
 * queries from the shared tables, waiting on the leader's recorded position; with embedded chdb the
 * data directory belongs to one process, so a standby opens it only once it holds the lock (a hot
 * standby that resumes from the recorded position when the leader dies).
 *
 * Losing the lock (Postgres restarting, the lock's connection dropped) makes the leader a standby
 * like any other, without exiting: it stops mirroring, then retries the lock at once and, while
 * Postgres cannot be reached, RECONNECT_FIRST_MS apart doubling to RECONNECT_MAX_MS. An embedded
 * store stays open meanwhile, and is closed (releasing the data directory, which chdb also locks on
 * disk) once another process is found holding the lock. Whoever takes the lock resumes from the
 * position recorded in the store, so a pass cut short is copied again (the same versions,
 * collapsed) and nothing is skipped.
 * Meanwhile queries answer 503 saying why.
 *
 * Start-up refusals, each one clear message and exit 1: no REPORTING_SECRET (the port would answer
 * any caller for any org, loopback included), and a ClickHouse older than the
 * mirror needs (checked with `select version()` before anything else touches it). A ClickHouse
 * that is merely unreachable is waited for: queries answer 503 meanwhile, and the outage is logged
 * once, not per retry. A database that cannot be reached at start is waited for as the web and
 * worker wait for it (api/db/health.ts: SETTLE_DATABASE_WAIT at most, then exit 1; a SIGTERM during
 * the wait exits 0), before the port opens.
 *
 * SIGTERM: stop taking requests, finish the ones in flight and the current mirror pass (its
 * position is recorded with its rows), close ClickHouse (never while a query runs) and exit 0.
 */
import type { Server } from 'node:http';
import net from 'node:net';
import type { Logger } from 'pino';
import { loadConfig, type Config } from '../api/config.ts';
import { createDb, rows, type Db } from '../api/db/connection.ts';
import { DatabaseWaitOver, waitForDatabase } from '../api/db/health.ts';
import { setDatabaseSilence } from '../api/db/silence.ts';
import { createLogger } from '../api/logger.ts';
import { gaugeOnScrape, initMetrics } from '../api/metrics.ts';
import { runUntilSignalled } from '../api/process.ts';
import { readCaseTables } from '../api/query/caseMap.ts';
import { caseTablesMatch, useCaseTables } from '../api/query/functions.ts';
import { FailureLog } from './failures.ts';
import { covers, formatSnapshot, type Snapshot } from './feed.ts';
import { LeaderLock, WAKE_CHANNEL } from './leader.ts';
import { Mirror, type RebuildProgress } from './mirror.ts';
import { notifyChannel } from './repository.ts';
import { createReportingApp, type Health, type ReportingEngine } from './server.ts';
import { openStore, storeTarget, UnsupportedClickHouse, type ReportingStore } from './store.ts';

export interface RunningReporting {
  url: string;
  server: Server;
  role: () => 'leader' | 'standby';
  mirror: () => Mirror | null;
  stop: () => Promise<void>;
}

export interface ReportingOptions {
  log?: Logger;
  /** called when the ClickHouse server turns out too old to mirror into; by default the process exits 1 */
  onFatal?: (error: Error) => void;
  /** aborted when the process is told to stop: ends a wait for the database at start */
  stopping?: AbortSignal;
}

const STANDBY_POLL_MS = 50;
const STALE_PASS_MS = 30_000;
/** The wait after the first attempt that cannot reach Postgres; each further one doubles it. */
const RECONNECT_FIRST_MS = 50;
/** The longest wait between attempts while Postgres cannot be reached: the mirror resumes within about this long of its return. */
const RECONNECT_MAX_MS = 250;

/** A configuration the process refuses to run with; its message says what to change. */
export class StartupRefused extends Error {
  override name = 'StartupRefused';
}

/** Whether a bind address only accepts connections from this machine. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  const address = host.replace(/^\[|\]$/g, '').replace(/^::ffff:/i, '');
  if (net.isIPv4(address)) return address.startsWith('127.');
  return net.isIPv6(address) && /^(0*:)*0*1$/.test(address.replace(/^::/, '0:'));
}

/**
 * The reporting port answers every org's aggregates and request logs, and stores request-log rows:
 * only for a caller holding the secret, on loopback too (any local user can reach loopback).
 */
export function requireSecret(config: Pick<Config, 'reportingHost' | 'reportingPort' | 'reportingSecret'>): string {
  if (config.reportingSecret) return config.reportingSecret;
  const where = isLoopbackHost(config.reportingHost) ? 'any local user' : 'anyone';
  throw new StartupRefused(`REPORTING_SECRET is not set: ${where} reaching ${config.reportingHost}:${config.reportingPort} could read every org's `
    + 'transaction aggregates and request logs. Set REPORTING_SECRET (the same value for the web process), or run under `settle up`, which makes one.');
}

/**
 * Has the ClickHouse compiler map case as the database the mirror follows does (its locale may
 * differ from the one the built-in tables were read from); until that is read, a fraction of a
 * second after start, the built-in tables answer.
 */
function followDatabaseCase(db: Db, log: Logger): void {
  readCaseTables((sql) => rows(db, sql)).then((tables) => {
    if (!caseTablesMatch(tables)) {
      useCaseTables(tables);
      log.warn({ lower: tables.lower.from.length, upper: tables.upper.from.length }, "this database maps case otherwise than Settle's built-in tables; reporting follows the database");
    }
    if (tables.widening.length > 0) {
      log.warn({ characters: tables.widening.join('') }, 'lower() or upper() of these characters gives more than one character in this database; reporting leaves them as they are');
    }
  }).catch((error: Error) => log.warn({ err: error.message }, "could not read the database's case mapping; reporting uses the built-in tables"));
}

export async function startReporting(config: Config, options: ReportingOptions = {}): Promise<RunningReporting> {
  if (!config.databaseUrl) throw new StartupRefused('DATABASE_URL is not set (use `settle up` to run with an embedded database)');
  const secret = requireSecret(config);
  setDatabaseSilence(config.databaseSilenceMs);
  const log = options.log ?? createLogger(config.logLevel, 'reporting');
  const target = storeTarget(config);
  let store: ReportingStore | null = target.embedded ? null : openStore(config);
  /** the store answered `select version()` with a version the mirror runs on */
  let verified = false;
  const storeFailures = new FailureLog(log, `ClickHouse at ${target.shown}`);

  /** True once the store is known usable; false while it cannot be reached (logged once); throws UnsupportedClickHouse. */
  async function verify(current: ReportingStore): Promise<boolean> {
    if (verified) return true;
    try {
      const version = await current.checkVersion(target.shown);
      verified = true;
      storeFailures.succeeded();
      log.info({ clickhouse: target.shown, version }, 'ClickHouse version supported');
      return true;
    } catch (error) {
      if (error instanceof UnsupportedClickHouse) throw error;
      storeFailures.failed(error);
      return false;
    }
  }

  if (store) {
    try {
      await verify(store);
    } catch (error) {
      await store.close().catch(() => {});
      throw new StartupRefused((error as Error).message);
    }
  }

  const db = createDb(config.databaseUrl, 4);
  try {
    await waitForDatabase(db, log, { url: config.databaseUrl, waitMs: config.databaseWaitMs, stopping: options.stopping });
  } catch (error) {
    await Promise.all([db.destroy(), store?.close().catch(() => {})]);
    throw error;
  }
  followDatabaseCase(db, log);
  const lock = new LeaderLock(config.databaseUrl, target.identity);
  let mirror: Mirror | null = null;
  /** rows copied by the mirrors this process ran before the current one (it leads again after losing the lock) */
  let rowsMirroredBefore = 0;
  let stopping = false;
  let becoming: Promise<void> | null = null;
  /** the mirror stopping and an embedded store closing after the lock was lost: no attempt until done */
  let yielding: Promise<void> | null = null;
  /** the last attempt could not open a connection to Postgres */
  let databaseUnreachable = false;
  const electionFailures = new FailureLog(log, 'leader election');

  const fatal = options.onFatal ?? ((error: Error) => {
    log.fatal({ err: error.message }, 'unsupported ClickHouse; exiting');
    process.exit(1);
  });

  /** A mirror still starting (its first copy can take minutes): stop() must reach it too. */
  let starting: Mirror | null = null;

  async function lead(): Promise<void> {
    // Held locally: losing the lock meanwhile closes this store, and the start then fails on it.
    const current = (store ??= openStore(config));
    if (!(await verify(current))) throw new Error(`ClickHouse at ${target.shown} is unreachable`);
    starting = new Mirror(db, current, log, {
      pollIntervalMs: config.reportingPollIntervalMs,
      batchIntervalMs: config.reportingBatchIntervalMs,
      pruneIntervalMs: config.reportingPruneIntervalMs,
    });
    log.info({ target: target.shown }, 'mirror leader');
    const started = starting;
    try {
      await started.start();
    } finally {
      starting = null;
    }
    // The lock lost while starting: lostLead stopped this mirror already; it must not go live.
    if (stopping || !lock.held) await started.stop();
    else mirror = started;
  }

  /**
   * The lock is gone, so another process may take it: stop writing before anything else, then try
   * to lead again (the first attempt at once). An embedded store stays open until another process
   * is found holding the lock (handBackStore): when the lock went with the database (a failover,
   * a restart), this process takes it again and resumes on the open store, instead of reopening
   * the data directory, seconds on a loaded machine.
   */
  function lostLead(error: Error): void {
    log.warn({ err: error.message }, 'mirror leadership lost: mirroring stopped until this process takes the lock again');
    const previous = mirror;
    mirror = null;
    const abandoned = starting;
    yielding = (async () => {
      await abandoned?.stop();
      if (previous) {
        await previous.stop();
        rowsMirroredBefore += previous.status.rowsMirrored;
      }
    })().finally(() => {
      yielding = null;
      scheduleAttempt(0);
    });
  }

  /** Another process leads: an embedded data directory this process still has open is closed for it (chdb locks it on disk). */
  async function handBackStore(): Promise<void> {
    if (!target.embedded || !store) return;
    const closing = store;
    store = null;
    await closing.close().catch((closeError: unknown) => log.warn({ err: (closeError as Error).message }, 'closing the embedded store failed'));
  }

  /** One attempt at a time; a caller arriving meanwhile waits for the one under way. */
  function contend(): Promise<void> {
    if (stopping) return Promise.resolve();
    becoming ??= attemptToLead().finally(() => (becoming = null));
    return becoming;
  }

  async function attemptToLead(): Promise<void> {
    try {
      await yielding;
      if (lock.held) return await lock.check();
      // A server store is checked before this process answers from it, leader or standby.
      if (store && !target.embedded && !(await verify(store))) return;
      let acquired: boolean;
      try {
        acquired = await lock.tryAcquire({
          onNotify: (channel) => mirror?.wake({ record: channel === WAKE_CHANNEL }),
          onLost: lostLead,
        });
        databaseUnreachable = false;
      } catch (error) {
        databaseUnreachable = true;
        throw error;
      }
      if (!acquired) await handBackStore();
      else if (!stopping) await lead();
      electionFailures.succeeded();
    } catch (error) {
      if (error instanceof UnsupportedClickHouse) return fatal(error);
      if (!storeFailures.failing) electionFailures.failed(error);
      if (lock.held && !mirror) await lock.release();
    }
  }

  // A standby's attempt opens a connection: at most once a second, however fast the mirror polls.
  const pollMs = Math.max(config.reportingPollIntervalMs, 1000);
  let retryMs = 0;
  let timer: NodeJS.Timeout | undefined;
  let timerDue = 0;

  /** An attempt in `delayMs`, unless one is due sooner: one timer at a time, each attempt scheduling the next. */
  function scheduleAttempt(delayMs: number): void {
    if (stopping) return;
    const due = Date.now() + delayMs;
    if (timer && timerDue <= due) return;
    clearTimeout(timer);
    timerDue = due;
    timer = setTimeout(() => {
      timer = undefined;
      void contend().then(scheduleNext);
    }, delayMs);
  }

  /** Backing off while Postgres cannot be reached (up to RECONNECT_MAX_MS); otherwise at the poll interval. */
  function scheduleNext(): void {
    retryMs = databaseUnreachable ? Math.min(retryMs ? retryMs * 2 : RECONNECT_FIRST_MS, RECONNECT_MAX_MS) : 0;
    scheduleAttempt(retryMs || pollMs);
  }

  /** A standby reads the leader's recorded position, nudging it to record a fresh one. */
  async function standbyReach(target: Snapshot, timeoutMs: number): Promise<Snapshot | null> {
    const deadline = Date.now() + timeoutMs;
    let nudged = false;
    for (;;) {
      const state = await store!.readState();
      if (state && covers(state.position, target)) return state.position;
      if (Date.now() >= deadline) return null;
      if (!nudged) {
        await notifyChannel(db, WAKE_CHANNEL, formatSnapshot(target));
        nudged = true;
      }
      await new Promise((resolve) => setTimeout(resolve, STANDBY_POLL_MS));
    }
  }

  const engine: ReportingEngine = {
    store: () => ((target.embedded && !mirror) || !verified ? null : store),
    notReady: () => {
      if (storeFailures.failing) return 'Reporting is unavailable: its data store cannot be reached; retry shortly';
      if (databaseUnreachable || yielding) return 'Reporting is unavailable: it cannot reach its database and is reconnecting; retry shortly';
      return 'Reporting is starting or on standby; retry shortly';
    },
    reach: async (target, timeoutMs) => {
      const current = mirror;
      // The rollup's changed days are read from the mirror (reporting/report.ts): no recompute to wait for.
      if (current) return (await current.waitFor(target, timeoutMs, { rollup: false })) ? current.status.position : null;
      return store ? standbyReach(target, timeoutMs) : null;
    },
    get rebuild() {
      const current = mirror;
      return current ? (progress: (p: RebuildProgress) => void) => current.rebuild(progress) : null;
    },
    health: async (): Promise<Health> => health(),
  };

  async function health(): Promise<Health> {
    const current = mirror;
    if (current) {
      const status = current.status;
      const sincePass = status.lastPassAt ? Date.now() - status.lastPassAt : null;
      return {
        healthy: sincePass !== null && sincePass < STALE_PASS_MS,
        body: { object: 'health', role: 'leader', position: formatSnapshot(status.position), rollup_position: formatSnapshot(current.rollupPosition), lag_ms: status.lagMs, last_pass_ms_ago: sincePass, rows_mirrored: rowsMirroredBefore + status.rowsMirrored,
          last_copy: status.lastCopy && { started_at: status.lastCopy.startedAt, snapshot_at: status.lastCopy.snapshotAt, read_at: status.lastCopy.readAt, inserted_at: status.lastCopy.insertedAt, rows: status.lastCopy.rows } },
      };
    }
    if (starting) return { healthy: false, body: { object: 'health', role: 'leader', detail: 'copying every transaction into a new mirror table' } };
    if (databaseUnreachable || yielding) return { healthy: false, body: { object: 'health', role: 'standby', detail: 'reconnecting to the database' } };
    if (store && !verified) return { healthy: false, body: { object: 'health', role: 'standby', detail: 'waiting for ClickHouse to answer' } };
    if (!store || target.embedded) return { healthy: false, body: { object: 'health', role: 'standby', detail: 'waiting for the mirror lock' } };
    const state = await store.readState().catch(() => null);
    return { healthy: state !== null, body: { object: 'health', role: 'standby', position: state ? formatSnapshot(state.position) : null } };
  }

  initMetrics();
  gaugeOnScrape('settle_reporting_mirror_lag_seconds', 'Commit-to-ClickHouse lag of the last mirror pass (leader only)', [], () => (mirror ? [[{}, mirror.status.lagMs / 1000]] : []));
  gaugeOnScrape('settle_reporting_rows_mirrored', 'Changed transactions copied into ClickHouse since this process started (leader only)', [], () => (mirror ? [[{}, rowsMirroredBefore + mirror.status.rowsMirrored]] : []));
  gaugeOnScrape('settle_reporting_leader', '1 when this process mirrors, 0 when it stands by', [], () => [[{}, mirror ? 1 : 0]]);
  const app = createReportingApp(engine, { secret, waitMs: config.reportingWaitMs, log, exportMaxRows: config.exportMaxRows, requestLogRetentionMs: config.requestLogRetentionMs });
  const server = app.listen(config.reportingPort, config.reportingHost);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.reportingPort;
  const url = `http://${config.reportingHost}:${port}`;
  log.info({ url, clickhouse: target.shown }, 'reporting listening');

  await contend();
  scheduleNext();

  const stop = async () => {
    stopping = true;
    clearTimeout(timer);
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const force = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
    await closed;
    clearTimeout(force);
    await starting?.stop();
    await becoming;
    await yielding;
    await mirror?.stop();
    mirror = null;
    await lock.release();
    await store?.close();
    store = null;
    await db.destroy();
  };
  return { url, server, role: () => (mirror ? 'leader' : 'standby'), mirror: () => mirror, stop };
}

if (import.meta.main) {
  // A refusal is one line that says what to change; a stack only for what nobody foresaw.
  await runUntilSignalled('reporting', (stopping) => startReporting(loadConfig(), { stopping }), (error) => error instanceof StartupRefused || error instanceof DatabaseWaitOver);
}
