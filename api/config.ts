/**
 * Configuration, read once from the environment into a typed object. Every option documents its
 * default; the defaults run everything on one machine.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface RateLimit {
  /** tokens added per second */
  perSecond: number;
  /** bucket size */
  burst: number;
}

export interface Config {
  /** PORT: the web process listens here. Default 8080. */
  port: number;
  /** HOST: bind address. Default 127.0.0.1 under `settle up`, 0.0.0.0 otherwise is the operator's call. */
  host: string;
  /** DATABASE_URL: Postgres connection string; several hosts (`h1:5432,h2:5432`) name a primary and its standbys, and the one accepting writes is used (api/db/primary.ts). No default: `settle up` starts an embedded server. */
  databaseUrl: string | undefined;
  /** SETTLE_DATABASE_WAIT: how long a web, worker or reporting process starting while its database cannot be reached (no host of DATABASE_URL accepts writes: a failover under way) waits for it before exiting 1; `0s` asks once. Default 60s. */
  databaseWaitMs: number;
  /** SETTLE_DATABASE_SILENCE: how long a database host may say nothing before a connection to it is taken for gone (a machine that died sends no reset): connecting must finish within it, an idle connection is probed by TCP keepalive after it, and a query waiting that long with nothing received has the host tried on a fresh connection, the waiting one dropped when that gets no answer either (a long query on a live host runs on). Default 10s. */
  databaseSilenceMs: number;
  /** SETTLE_DATA_DIR: where embedded data and generated secrets live. Default `<project>/.data`. */
  dataDir: string;
  /** LOG_LEVEL: pino level. Default `info`. */
  logLevel: string;
  /** SETTLE_RATE_LIMIT: `<per second>/<burst>` per key, client token, and client address (client tokens and hosted pages), or `off`. Default 1000/2000. */
  rateLimit: RateLimit | null;
  /**
   * SETTLE_GROUP_COMMIT: `off` writes each card payment and plain create that commits on its own in
   * a statement of its own, instead of sharing one with those arriving meanwhile. Default on.
   */
  groupCommit: boolean;
  /**
   * SETTLE_AUDIT_BY: `trigger` leaves the audit events of created rows to the database's audit
   * trigger; `statement` has the statement that creates them write them. Default statement.
   */
  auditBy: 'statement' | 'trigger';
  /**
   * SETTLE_TRUST_PROXY: how many proxies in front of the web process append to X-Forwarded-For
   * (`true` is one); the client's address is the one the outermost of them saw. Default `false`:
   * the connection's address, X-Forwarded-For ignored (a client could write any address in it).
   */
  trustedProxies: number;
  /** SETTLE_BODY_LIMIT: request body limit in bytes. Default 1 MiB. */
  bodyLimit: number;
  /** SETTLE_DB_POOL: connections per web process. Default 10. */
  dbPoolSize: number;
  /** WORKER_CONCURRENCY: graphile-worker jobs run at once per worker process. Default 10. */
  workerConcurrency: number;
  /**
   * SETTLE_VAULT_KEY: base64 32-byte key for card data. Default: the data directory's `vault.key`,
   * generated only for a database that records no key yet.
   */
  vaultKey: string | undefined;
  /** SETTLE_EXPORT_MAX_ROWS: the most rows one CSV or Parquet export holds. Default 1,000,000. */
  exportMaxRows: number;
  /** SETTLE_VAULT_PREVIOUS_KEYS: comma-separated keys still opened during a rotation. Default none. */
  vaultPreviousKeys: string[];
  /** SETTLE_AUTH_WINDOW: ms an automatic-mode authorization waits for capture. Default 120000. */
  authorizationWindowMs: number;
  /** SETTLE_PROCESSING_DELAY: ms before a v2 `processing` payment completes. Default 200. */
  processingDelayMs: number;
  /** SETTLE_PUBLIC_URL: the base of hosted-page URLs shown in `url` fields (`<base>/pay/<id>`). Default `http://127.0.0.1:<PORT>`. */
  publicUrl: string;
  /** SETTLE_VERIFICATION_DELAY: ms from attaching an entity to an account until the sandbox verifies (or rejects) it. Default 1000. */
  verificationDelayMs: number;
  /** SMTP_URL: where link e-mails go, e.g. `smtp://user:pass@host:587` (`smtps://` for TLS from the start). Default none: each message is written as an .eml file under `<data dir>/mail/`. */
  smtpUrl: string | undefined;
  /** SMTP_FROM: the From address of link e-mails. Default `Settle <no-reply@localhost>`. */
  smtpFrom: string;
  /** WORKER_POLL_INTERVAL: ms between checks for jobs that became due (new jobs arrive by NOTIFY). Default 250. */
  workerPollIntervalMs: number;
  /** WEBHOOK_DISPATCH_POLL: ms a caught-up dispatcher waits before looking at the events outbox again (the most an event waits to be dispatched when the worker is idle); 0: this process does not dispatch (another worker must). Default 20. */
  webhookDispatchPollMs: number;
  /** WORKER_LOCAL_QUEUE: jobs a worker process fetches and locks per round trip (>1 enables batching). Default 0 (off). */
  workerLocalQueue: number;
  /** WORKER_COMPLETE_BATCH_MS: ms to gather job completions into one statement (-1 off). Default 0. */
  workerCompleteBatchMs: number;
  /** WORKER_DEAD_AFTER: a worker process silent this long has its locked jobs released. Default 20s. */
  workerDeadAfterMs: number;
  /** WORKER_METRICS_PORT: the worker answers `GET /metrics` on this port (bound to HOST). Default 0 (off). */
  workerMetricsPort: number;
  /** WEBHOOK_RETRY_SCHEDULE: delays between attempts, comma-separated durations. Default 5s,5m,30m,2h,5h,10h,10h,24h. */
  webhookRetrySchedule: number[];
  /** WEBHOOK_TIMEOUT: how long a receiver has to answer. Default 15s. */
  webhookTimeoutMs: number;
  /** WEBHOOK_ALLOW_PRIVATE: `true` lets deliveries reach private and loopback addresses. Default false. */
  webhookAllowPrivate: boolean;
  /** WEBHOOK_DISABLE_AFTER: a webhook whose schedule keeps running out for this long is disabled. Default 5d. */
  webhookDisableAfterMs: number;
  /** WEBHOOK_TENANT_CONCURRENCY: deliveries of one org in flight at once per worker process; more wait their turn (0: no limit); an org alone in the process whose receivers answer may reach three quarters of WORKER_CONCURRENCY. Default a quarter of WORKER_CONCURRENCY, at least 1. */
  webhookTenantConcurrency: number;
  /** WEBHOOK_DNS_TIMEOUT: how long a delivery waits for its host name to resolve. Default 3s. */
  webhookDnsTimeoutMs: number;
  /** SETTLE_SHUTDOWN_TIMEOUT: ms a process waits for in-flight work on SIGTERM. Default 10000. */
  shutdownTimeoutMs: number;
  /** CLICKHOUSE_URL: a ClickHouse server (`http://host:8123`). Default: embedded chdb in `<data dir>/clickhouse`. */
  clickhouseUrl: string | undefined;
  /** CLICKHOUSE_USER: user on that server. Default `default`. */
  clickhouseUser: string;
  /** CLICKHOUSE_PASSWORD: its password. Default empty. */
  clickhousePassword: string;
  /** CLICKHOUSE_DATABASE: database holding the mirror (created when missing). Default `settle`. */
  clickhouseDatabase: string;
  /** REPORTING_PORT: the reporting process's internal HTTP port. Default 8091. */
  reportingPort: number;
  /** REPORTING_HOST: its bind address; keep it private, the API's auth is in front of it. Default 127.0.0.1. */
  reportingHost: string;
  /** REPORTING_URL: where the web process sends transaction aggregates; `off` answers them from Postgres. Default `http://127.0.0.1:<REPORTING_PORT>`. */
  reportingUrl: string | null;
  /** REPORTING_SECRET: bearer token between web and reporting, required by reporting on every request. Default none: `settle up` generates one for its children; reporting run alone refuses to start without it. */
  reportingSecret: string | undefined;
  /** REPORTING_POLL_INTERVAL: ms between mirror passes while idle (the standby retries the leader lock at most once a second). Default 100. */
  reportingPollIntervalMs: number;
  /** REPORTING_BATCH_INTERVAL: minimum ms between the starts of mirror passes while changes flow (longer when inserts slow: twice a pass's insert into ClickHouse, up to 100 ms), and the poll for a second after the last pass that copied rows. Default 25. */
  reportingBatchIntervalMs: number;
  /** REPORTING_WAIT: ms a query waits for the mirror to reach the API's position before 503. Default 5000. */
  reportingWaitMs: number;
  /** REPORTING_PRUNE_INTERVAL: ms between prunes of mirrored change rows by the mirror leader. Default 10000. */
  reportingPruneIntervalMs: number;
  /** SETTLE_IDEMPOTENCY_RETENTION: how long idempotency records are kept (duration). Default 24h. */
  idempotencyRetentionMs: number;
  /** SETTLE_EVENT_RETENTION: how long dispatched events (and their finished deliveries) are kept. Default 30d. */
  eventRetentionMs: number;
  /** WEBHOOK_LOG_RETENTION: how long webhook delivery logs (attempts) are kept. Default 30d. */
  webhookLogRetentionMs: number;
  /** SETTLE_AUDIT_RETENTION: how long audit events are kept. Default 400d. */
  auditRetentionMs: number;
  /** SETTLE_REQUEST_LOG_RETENTION: how long the reporting store keeps request log rows. Default 30d. */
  requestLogRetentionMs: number;
  /** SETTLE_REQUEST_LOG_BUFFER: request log rows a web process holds while reporting cannot take them; past it the oldest are dropped (counted). Default 100000. */
  requestLogBuffer: number;
  /** SETTLE_RETENTION_SCHEDULE: crontab time of the retention task in the worker, or `off`. Default every 10 minutes. */
  retentionSchedule: string | null;
}

export function parseRateLimit(text: string | undefined): RateLimit | null {
  if (text === undefined || text === '') return { perSecond: 1000, burst: 2000 };
  if (text === 'off') return null;
  const match = /^(\d+(?:\.\d+)?)\/(\d+)$/.exec(text);
  if (!match) throw new Error(`SETTLE_RATE_LIMIT must be <per second>/<burst> or off, got "${text}"`);
  return { perSecond: Number(match[1]), burst: Number(match[2]) };
}

export function parseTrustProxy(text: string | undefined): number {
  if (text === undefined || text === '' || text === 'false') return 0;
  if (text === 'true') return 1;
  if (/^\d+$/.test(text)) return Number(text);
  throw new Error(`SETTLE_TRUST_PROXY must be true, false or a number of proxies, got "${text}"`);
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "5s,5m,30m" → [5000, 300000, 1800000]; units ms, s, m, h, d. */
export function parseDurations(text: string, name: string): number[] {
  const values = text.split(',').map((part) => {
    const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(part);
    if (!match) throw new Error(`${name}: "${part}" is not a duration like 500ms, 5s, 5m, 2h or 1d`);
    return Math.round(Number(match[1]) * UNIT_MS[match[2]]);
  });
  if (values.length === 0) throw new Error(`${name} is empty`);
  return values;
}

function intFromEnv(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    port: intFromEnv(env, 'PORT', 8080),
    host: env.HOST ?? '127.0.0.1',
    databaseUrl: env.DATABASE_URL || undefined,
    databaseWaitMs: parseDurations(env.SETTLE_DATABASE_WAIT ?? '60s', 'SETTLE_DATABASE_WAIT')[0],
    databaseSilenceMs: parseDurations(env.SETTLE_DATABASE_SILENCE ?? '10s', 'SETTLE_DATABASE_SILENCE')[0],
    dataDir: path.resolve(env.SETTLE_DATA_DIR ?? path.join(projectRoot, '.data')),
    logLevel: env.LOG_LEVEL ?? 'info',
    rateLimit: parseRateLimit(env.SETTLE_RATE_LIMIT),
    groupCommit: env.SETTLE_GROUP_COMMIT !== 'off',
    auditBy: env.SETTLE_AUDIT_BY === 'trigger' ? 'trigger' : 'statement',
    trustedProxies: parseTrustProxy(env.SETTLE_TRUST_PROXY),
    bodyLimit: intFromEnv(env, 'SETTLE_BODY_LIMIT', 1024 * 1024),
    requestLogBuffer: intFromEnv(env, 'SETTLE_REQUEST_LOG_BUFFER', 100_000),
    dbPoolSize: intFromEnv(env, 'SETTLE_DB_POOL', 10),
    workerConcurrency: intFromEnv(env, 'WORKER_CONCURRENCY', 10),
    workerLocalQueue: intFromEnv(env, 'WORKER_LOCAL_QUEUE', 0),
    workerCompleteBatchMs: env.WORKER_COMPLETE_BATCH_MS === '-1' ? -1 : intFromEnv(env, 'WORKER_COMPLETE_BATCH_MS', 0),
    workerDeadAfterMs: parseDurations(env.WORKER_DEAD_AFTER ?? '20s', 'WORKER_DEAD_AFTER')[0],
    workerMetricsPort: intFromEnv(env, 'WORKER_METRICS_PORT', 0),
    webhookRetrySchedule: parseDurations(env.WEBHOOK_RETRY_SCHEDULE ?? '5s,5m,30m,2h,5h,10h,10h,24h', 'WEBHOOK_RETRY_SCHEDULE'),
    webhookTimeoutMs: parseDurations(env.WEBHOOK_TIMEOUT ?? '15s', 'WEBHOOK_TIMEOUT')[0],
    webhookAllowPrivate: env.WEBHOOK_ALLOW_PRIVATE === 'true',
    webhookDisableAfterMs: parseDurations(env.WEBHOOK_DISABLE_AFTER ?? '5d', 'WEBHOOK_DISABLE_AFTER')[0],
    webhookTenantConcurrency: intFromEnv(env, 'WEBHOOK_TENANT_CONCURRENCY', Math.max(1, Math.floor(intFromEnv(env, 'WORKER_CONCURRENCY', 10) / 4))),
    webhookDnsTimeoutMs: parseDurations(env.WEBHOOK_DNS_TIMEOUT ?? '3s', 'WEBHOOK_DNS_TIMEOUT')[0],
    workerPollIntervalMs: intFromEnv(env, 'WORKER_POLL_INTERVAL', 250),
    webhookDispatchPollMs: intFromEnv(env, 'WEBHOOK_DISPATCH_POLL', 20),
    shutdownTimeoutMs: intFromEnv(env, 'SETTLE_SHUTDOWN_TIMEOUT', 10000),
    ...reportingConfig(env),
    ...retentionConfig(env),
    vaultKey: env.SETTLE_VAULT_KEY || undefined,
    exportMaxRows: intFromEnv(env, 'SETTLE_EXPORT_MAX_ROWS', 1_000_000),
    vaultPreviousKeys: (env.SETTLE_VAULT_PREVIOUS_KEYS ?? '').split(',').map((k) => k.trim()).filter(Boolean),
    authorizationWindowMs: intFromEnv(env, 'SETTLE_AUTH_WINDOW', 120_000),
    processingDelayMs: intFromEnv(env, 'SETTLE_PROCESSING_DELAY', 200),
    publicUrl: (env.SETTLE_PUBLIC_URL || `http://127.0.0.1:${intFromEnv(env, 'PORT', 8080)}`).replace(/\/+$/, ''),
    verificationDelayMs: intFromEnv(env, 'SETTLE_VERIFICATION_DELAY', 1000),
    smtpUrl: env.SMTP_URL || undefined,
    smtpFrom: env.SMTP_FROM || 'Settle <no-reply@localhost>',
  };
}

function reportingConfig(env: NodeJS.ProcessEnv) {
  const reportingPort = intFromEnv(env, 'REPORTING_PORT', 8091);
  const url = env.REPORTING_URL || `http://127.0.0.1:${reportingPort}`;
  return {
    clickhouseUrl: env.CLICKHOUSE_URL || undefined,
    clickhouseUser: env.CLICKHOUSE_USER || 'default',
    clickhousePassword: env.CLICKHOUSE_PASSWORD ?? '',
    clickhouseDatabase: env.CLICKHOUSE_DATABASE || 'settle',
    reportingPort,
    reportingHost: env.REPORTING_HOST || '127.0.0.1',
    reportingUrl: url === 'off' ? null : url.replace(/\/+$/, ''),
    reportingSecret: env.REPORTING_SECRET || undefined,
    reportingPollIntervalMs: intFromEnv(env, 'REPORTING_POLL_INTERVAL', 100),
    reportingBatchIntervalMs: intFromEnv(env, 'REPORTING_BATCH_INTERVAL', 25),
    reportingWaitMs: intFromEnv(env, 'REPORTING_WAIT', 5000),
    reportingPruneIntervalMs: intFromEnv(env, 'REPORTING_PRUNE_INTERVAL', 10_000),
  };
}

function retentionConfig(env: NodeJS.ProcessEnv) {
  const schedule = (env.SETTLE_RETENTION_SCHEDULE ?? '*/10 * * * *').trim();
  if (schedule !== 'off' && schedule.split(/\s+/).length !== 5) {
    throw new Error(`SETTLE_RETENTION_SCHEDULE must be a crontab time (5 fields, e.g. "*/10 * * * *") or off, got "${schedule}"`);
  }
  return {
    idempotencyRetentionMs: parseDurations(env.SETTLE_IDEMPOTENCY_RETENTION ?? '24h', 'SETTLE_IDEMPOTENCY_RETENTION')[0],
    eventRetentionMs: parseDurations(env.SETTLE_EVENT_RETENTION ?? '30d', 'SETTLE_EVENT_RETENTION')[0],
    webhookLogRetentionMs: parseDurations(env.WEBHOOK_LOG_RETENTION ?? '30d', 'WEBHOOK_LOG_RETENTION')[0],
    auditRetentionMs: parseDurations(env.SETTLE_AUDIT_RETENTION ?? '400d', 'SETTLE_AUDIT_RETENTION')[0],
    requestLogRetentionMs: parseDurations(env.SETTLE_REQUEST_LOG_RETENTION ?? '30d', 'SETTLE_REQUEST_LOG_RETENTION')[0],
    retentionSchedule: schedule === 'off' ? null : schedule,
  };
}
