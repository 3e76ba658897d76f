/**
 * The `worker` process: graphile-worker running the task list against DATABASE_URL. On SIGTERM
 * it stops taking jobs, finishes the ones in hand and exits 0.
 */
import './threadpool.ts'; // first: sizes libuv's pool before anything uses it
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { Logger, run, type Runner, type TaskList, type WorkerEvents } from 'graphile-worker';
import { loadConfig, type Config } from '../api/config.ts';
import { createDb, type Db } from '../api/db/connection.ts';
import { createLogger } from '../api/logger.ts';
import { exitOnSignals } from '../api/process.ts';
import { heartbeat, releaseDeadWorkers } from '../api/db/webhooks.ts';
import { createDomainServices } from '../api/domain.ts';
import { bankReject, completeProcessing, expireAuthorization } from './tasks/transactionTasks.ts';
import { verifyEntity } from './tasks/entityVerification.ts';
import { expireIntent } from './tasks/intentExpiry.ts';
import { sendLinkEmail } from './tasks/linkEmail.ts';
import { retentionCrontab, retentionTask } from './tasks/retention.ts';
import { FUNDING_CRONTAB, fundInstantTask, fundingDay, sandboxChargeback, sandboxChargebackReversal } from './tasks/funding.ts';
import { runBillingDayForAll } from '../api/families/billing_schedules/run.ts';
import { timedRuns } from '../api/metrics.ts';
import { startWorkerMetrics } from './metricsServer.ts';
import { deliverWebhook, dispatchEvents } from './webhooks/deliver.ts';
import { createDnsLookups } from './webhooks/dnsLookup.ts';
import { OAuthTokens } from './webhooks/oauth.ts';
import { createOutbound } from './webhooks/outbound.ts';
import { TenantSlots } from './webhooks/tenantSlots.ts';

/** What a test may replace in the worker. */
export interface WorkerSeams {
  /** the clock OAuth tokens are cached by (delivery times stay on the database's clock) */
  tokenClock?: () => number;
}

export function taskList(db: Db, config: Config, seams: WorkerSeams = {}): TaskList {
  const http = createOutbound({ allowPrivate: config.webhookAllowPrivate, timeoutMs: config.webhookTimeoutMs });
  const { vault } = createDomainServices(config);
  const now = () => new Date();
  return {
    dispatch_events: dispatchEvents(db),
    deliver_webhook: deliverWebhook({
      db, http, oauth: new OAuthTokens(http, seams.tokenClock), vault, schedule: config.webhookRetrySchedule, disableAfterMs: config.webhookDisableAfterMs,
      slots: new TenantSlots(config.webhookTenantConcurrency),
      lookups: createDnsLookups({ timeoutMs: config.webhookDnsTimeoutMs, pendingPerTenant: config.webhookTenantConcurrency }),
      timeoutMs: config.webhookTimeoutMs,
    }),
    complete_processing: completeProcessing(db),
    bank_reject: bankReject(db),
    expire_authorization: expireAuthorization(db),
    verify_entity: verifyEntity(db, config.verificationDelayMs),
    expire_intent: expireIntent(db),
    send_link_email: sendLinkEmail(db, config, createLogger(config.logLevel, 'worker')),
    retention: retentionTask(db, config),
    funding_day: fundingDay(db, now),
    fund_instant: fundInstantTask(db, now),
    sandbox_chargeback: sandboxChargeback(db, now),
    sandbox_chargeback_reversal: sandboxChargebackReversal(db),
    billing_day: async () => {
      try {
        await runBillingDayForAll(db, createDomainServices(config), new Date());
        timedRuns.inc({ task: 'billing_day', result: 'ok' });
      } catch (error) {
        timedRuns.inc({ task: 'billing_day', result: 'failed' });
        throw error;
      }
    },
  };
}

export interface RunningWorker {
  runner: Runner;
  stop: () => Promise<void>;
}

export async function startWorker(config: Config, seams: WorkerSeams = {}): Promise<RunningWorker> {
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set (use `settle up` to run with an embedded database)');
  const log = createLogger(config.logLevel, 'worker');
  const db = createDb(config.databaseUrl, config.workerConcurrency + 2);
  // Our own pool, so a dropped connection (database restart) is logged instead of crashing the process.
  const pgPool = new pg.Pool({ connectionString: config.databaseUrl, max: config.workerConcurrency + 2 });
  const lost = (error: Error) => log.warn({ err: error.message }, 'worker database connection lost');
  pgPool.on('error', lost);
  pgPool.on('connect', (client) => client.on('error', lost));
  // Liveness: this process's worker ids are announced; jobs held by a process that went silent
  // (kill -9, lost machine) are unlocked for others instead of waiting graphile-worker's 4 hours.
  const events: WorkerEvents = new EventEmitter() as WorkerEvents;
  const workerIds = new Set<string>();
  events.on('pool:create', ({ workerPool }) => workerIds.add(workerPool.id));
  events.on('worker:create', ({ worker }) => workerIds.add(worker.workerId));
  // Job completions and failures both go through graphile-worker's batcher: unbatched, a failure
  // to record them (database restarting) is an unhandled rejection that kills the process.
  const start = () => run({
    pgPool,
    events,
    // graphile-worker's own messages go through our structured log, at our level.
    logger: new Logger((scope) => (level, message, meta) => {
      const method = level === 'error' ? 'error' : level === 'warning' ? 'warn' : level === 'info' ? 'debug' : 'trace';
      log[method]({ ...scope, ...meta }, message);
    }),
    preset: {
      worker: {
        localQueue: config.workerLocalQueue > 1 ? { size: config.workerLocalQueue } : undefined,
        completeJobBatchDelay: config.workerCompleteBatchMs,
        failJobBatchDelay: Math.max(0, config.workerCompleteBatchMs),
      },
    },
    // Retention, the daily billing run at 00:05 UTC and the funding run at 00:10 (once each, whichever worker takes it).
    crontab: [retentionCrontab(config), '5 0 * * * billing_day ?jobKey=billing_day&jobKeyMode=preserve_run_at', FUNDING_CRONTAB].filter(Boolean).join('\n'),
    concurrency: config.workerConcurrency,
    noHandleSignals: true,
    pollInterval: config.workerPollIntervalMs,
    taskList: taskList(db, config, seams),
  });
  // When the database goes away mid-job, graphile-worker shuts its pool down ("queue is in an
  // inconsistent state"), and that shutdown can hang. Replace the pool at once; the old pool's ids
  // stop being announced, so the jobs it still holds are released after WORKER_DEAD_AFTER like
  // those of a dead process.
  let stopped = false;
  let currentPool = '';
  events.on('pool:create', ({ workerPool }) => (currentPool = workerPool.id));
  let runner = await start();
  let replacing = false;
  const replace = async (old: Runner, reason: string) => {
    if (stopped || replacing || old !== runner) return;
    replacing = true;
    log.error({ err: reason }, 'job runner stopped; starting a new one');
    workerIds.clear();
    old.kill().catch(() => {});
    while (!stopped) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      try {
        const next = await start();
        if (stopped) return void (await next.stop());
        runner = next;
        replacing = false;
        next.promise.then(() => replace(next, 'ended'), (error: Error) => replace(next, error.message));
        return;
      } catch (error) {
        log.warn({ err: (error as Error).message }, 'job runner restart failed; retrying');
      }
    }
  };
  events.on('pool:gracefulShutdown', ({ workerPool, message }) => {
    if (workerPool.id === currentPool) void replace(runner, message);
  });
  const first = runner;
  first.promise.then(() => replace(first, 'ended'), (error: Error) => replace(first, error.message));
  const beat = async () => {
    try {
      await heartbeat(db, [...workerIds]);
      const released = await releaseDeadWorkers(db, config.workerDeadAfterMs);
      if (released) log.warn({ released }, 'released the jobs of silent worker processes');
    } catch (error) {
      log.warn({ err: (error as Error).message }, 'heartbeat failed');
    }
  };
  await beat();
  const metricsServer = await startWorkerMetrics(db, config.workerMetricsPort, config.host);
  const beating = setInterval(beat, Math.max(200, Math.floor(config.workerDeadAfterMs / 4)));
  log.info({ concurrency: config.workerConcurrency, workers: workerIds.size }, 'worker running');
  return {
    get runner() {
      return runner;
    },
    stop: async () => {
      stopped = true;
      clearInterval(beating);
      // (rejects only when this runner had already stopped on its own)
      await runner.stop().catch(() => {});
      metricsServer?.close();
      await Promise.all([db.destroy(), pgPool.end()]);
    },
  };
}

if (import.meta.main) {
  const worker = await startWorker(loadConfig());
  exitOnSignals(worker.stop, (message) => console.error(message));
}
