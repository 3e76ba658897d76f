/**
 * The `worker` process: graphile-worker running the task list against DATABASE_URL. On SIGTERM
 * it stops taking jobs, finishes the ones in hand and exits 0.
 */
import './threadpool.ts'; // first: sizes libuv's pool before anything uses it
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { Logger, run, type Runner, type Task, type TaskList, type WorkerEvents } from 'graphile-worker';
import { loadConfig, type Config } from '../api/config.ts';
import { actingDatabaseUrl, runAudited } from '../api/db/auditContext.ts';
import { createDb, type Db } from '../api/db/connection.ts';
import { DatabaseWaitOver, waitForDatabase } from '../api/db/health.ts';
import { primaryPool } from '../api/db/primary.ts';
import { setDatabaseSilence } from '../api/db/silence.ts';
import { createLogger } from '../api/logger.ts';
import { runUntilSignalled } from '../api/process.ts';
import { startLiveness } from './livenessThread.ts';
import { openVault, VaultKeyRefused } from '../api/vaultKeys.ts';
import type { Vault } from '../api/vault.ts';
import { createDomainServices } from '../api/domain.ts';
import { withRandomSource } from '../api/ids.ts';
import { withDefaults, type Seams } from '../api/seams.ts';
import type { Tenant } from '../api/engine/family.ts';
import { databaseTenantGate, type TenantGate } from '../api/tenantGate.ts';
import { bankReject, completeProcessing, expireAuthorization } from './tasks/transactionTasks.ts';
import { verifyEntity } from './tasks/entityVerification.ts';
import { expireIntent } from './tasks/intentExpiry.ts';
import { sendLinkEmail } from './tasks/linkEmail.ts';
import { retentionCrontab, retentionTask } from './tasks/retention.ts';
import { FUNDING_CRONTAB, fundInstantTask, fundingDay, sandboxChargeback, sandboxChargebackReversal } from './tasks/funding.ts';
import { BILLING_CRONTAB, billingDay } from './tasks/billingDay.ts';
import { startWorkerMetrics } from './metricsServer.ts';
import { deliveryWorker, settledAll, type DispatchClaims } from './webhooks/deliver.ts';
import { createDnsLookups } from './webhooks/dnsLookup.ts';
import { OAuthTokens } from './webhooks/oauth.ts';
import { createOutbound } from './webhooks/outbound.ts';
import { RateLimiter } from './webhooks/rateLimiter.ts';
import { TenantSlots } from './webhooks/tenantSlots.ts';
import { DISPATCH_BATCH, startDispatchLoop } from './webhooks/dispatchLoop.ts';
import { applyWriteSettings } from '../api/db/writeSettings.ts';

export interface WorkerOptions {
  /** what a test replaces (api/seams.ts); the real clock, random source, sandbox processor and SSRF-guarded client when absent */
  seams?: Partial<Seams>;
  /** aborted when the process is told to stop: ends a wait for the database at start */
  stopping?: AbortSignal;
}

/** The tenant a job is about, when its payload names one (deliveries, e-mails, expiries, verifications). */
function tenantOfJob(payload: unknown): Tenant | null {
  const { org_id: orgId, environment } = (payload ?? {}) as { org_id?: unknown; environment?: unknown };
  return typeof orgId === 'string' && (environment === 'test' || environment === 'live') ? { orgId, environment } : null;
}

/**
 * The worker's tasks. Timed work reads `seams.clock` (the funding run, instant funding, sandbox
 * chargebacks, link expiry, verification, the billing day, e-mail and delivery retries, OAuth token
 * lifetimes); the billing day's automatic payments ask `seams.processor`; deliveries and token
 * requests go out through `seams.outbound`; ids minted in a job draw from `seams.random`.
 */
/**
 * `gate`: a job about a test tenant runs under the tenant's gate (api/tenantGate.ts), so it never
 * overlaps a reset of the environment (jobs about transactions instead hold the transaction's row
 * in the one database transaction that reads and writes it, which a reset waits for).
 */
export function taskList(db: Db, config: Config, given: Partial<Seams> = {}, vault?: Vault, gate?: TenantGate): TaskList {
  return workerTasks(db, config, given, vault, gate).tasks;
}

/**
 * The task list, and the attempts of deliveries a dispatch pass claims (deliver.ts), each run as
 * its job would be: audited as the `deliver_webhook` task's, under its tenant's gate, drawing ids
 * from the given random source.
 */
export function workerTasks(db: Db, config: Config, given: Partial<Seams> = {}, vault?: Vault, gate?: TenantGate): { tasks: TaskList; claims: DispatchClaims } {
  const seams = withDefaults(given);
  const http = seams.outbound ?? createOutbound({ allowPrivate: config.webhookAllowPrivate, timeoutMs: config.webhookTimeoutMs });
  const domain = createDomainServices(config, seams, vault);
  const { clock } = seams;
  const delivery = deliveryWorker({
      db, http, oauth: new OAuthTokens(http, clock), vault: domain.vault, domain, schedule: config.webhookRetrySchedule, disableAfterMs: config.webhookDisableAfterMs,
      // A slot further off than a poll for due jobs and a second's margin (a loaded worker takes a
      // due job late, and a job back past its slot gives it up) is waited for by a deferred job.
      rates: new RateLimiter(db, config.workerPollIntervalMs + 1000),
      slots: new TenantSlots(config.webhookTenantConcurrency, undefined, config.workerConcurrency),
      lookups: createDnsLookups({ timeoutMs: config.webhookDnsTimeoutMs, pendingPerTenant: config.webhookTenantConcurrency }),
      timeoutMs: config.webhookTimeoutMs,
      now: () => clock().getTime(),
      // Retry jitter from the random seam only when a test gave one (Math.random otherwise, as before).
      random: given.random ? () => given.random!(4).readUInt32BE(0) / 2 ** 32 : undefined,
  });
  const tasks: TaskList = {
    deliver_webhook: delivery.task,
    complete_processing: completeProcessing(db, domain),
    bank_reject: bankReject(db, domain),
    expire_authorization: expireAuthorization(db, domain),
    verify_entity: verifyEntity(db, domain, config.verificationDelayMs),
    expire_intent: expireIntent(db, domain, clock),
    send_link_email: sendLinkEmail(db, config, createLogger(config.logLevel, 'worker'), { clock }),
    retention: retentionTask(db, config),
    funding_day: fundingDay(db, domain, clock),
    fund_instant: fundInstantTask(db, domain, clock),
    sandbox_chargeback: sandboxChargeback(db, domain, clock),
    sandbox_chargeback_reversal: sandboxChargebackReversal(db, domain),
    billing_day: billingDay(db, domain, gate && ((tenant, work) => gate.around(tenant, work))),
  };
  const gated = <T>(payload: unknown, work: () => Promise<T>): Promise<T> => {
    const tenant = gate && tenantOfJob(payload);
    return tenant ? gate.around(tenant, work) : work();
  };
  // Every change a job makes is the job's in the audit history.
  const audited = Object.fromEntries(Object.entries(tasks).map(([name, task]): [string, Task] => [name, (payload, helpers) =>
    runAudited({ actor: { type: 'system', name } }, () => gated(payload, async () => task!(payload, helpers)))]));
  const random = given.random;
  const drawing = <T>(work: () => Promise<T>): Promise<T> => (random ? withRandomSource(random, work) : work());
  // Claimed deliveries run together per tenant, under one entry of its gate, as companions run under their job's.
  const claims: DispatchClaims = {
    claim: delivery.claims.claim,
    roomFreed: delivery.claims.roomFreed,
    run: async (jobs, lockedBy) => {
      const byTenant = new Map<string, typeof jobs>();
      for (const job of jobs) {
        const tenant = tenantOfJob(job.payload);
        const key = tenant ? `${tenant.orgId} ${tenant.environment}` : '';
        const group = byTenant.get(key);
        if (group) group.push(job);
        else byTenant.set(key, [job]);
      }
      await settledAll([...byTenant.values()].map((group) => delivery.claims.run(group, lockedBy, (work) =>
        runAudited({ actor: { type: 'system', name: 'deliver_webhook' } }, () => gated(group[0].payload, () => drawing(work))))));
    },
  };
  if (!random) return { tasks: audited, claims };
  // Every job mints its ids from the given source (api/ids.ts).
  const drawingFrom = (task: Task): Task => (payload, helpers) => withRandomSource(random, () => task(payload, helpers));
  return { tasks: Object.fromEntries(Object.entries(audited).map(([name, task]) => [name, drawingFrom(task)])), claims };
}

export interface RunningWorker {
  runner: Runner;
  stop: () => Promise<void>;
}

export async function startWorker(config: Config, options: WorkerOptions = {}): Promise<RunningWorker> {
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set (use `settle up` to run with an embedded database)');
  const log = createLogger(config.logLevel, 'worker');
  applyWriteSettings(config);
  setDatabaseSilence(config.databaseSilenceMs);
  // What the worker changes outside a job (the dispatch loop disabling a webhook) is the worker's.
  const db = createDb(actingDatabaseUrl(config.databaseUrl, { actor: { type: 'system', name: 'worker' } }), config.workerConcurrency + 2);
  let vault: Vault;
  try {
    await waitForDatabase(db, log, { url: config.databaseUrl, waitMs: config.databaseWaitMs, stopping: options.stopping });
    vault = await openVault(config, db, log);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  const tenantGate = databaseTenantGate(config.databaseUrl, db);
  // Our own pool, so a dropped connection (database restart) is logged instead of crashing the process.
  // Its commits (taking a job, completing one) do not wait for the WAL to reach the disk: on a
  // server whose flushes are slow, two flushes per job were where workers waited most. A crash of
  // the server may forget the last of them, and a forgotten completion or lock reruns the job, as
  // a worker's crash does (jobs are at least once); a delivery already answered sends nothing again.
  const pgPool = primaryPool(config.databaseUrl, { max: config.workerConcurrency + 2, options: '-c synchronous_commit=off' });
  const lost = (error: Error) => log.warn({ err: error.message }, 'worker database connection lost');
  pgPool.on('error', lost);
  pgPool.on('connect', (client) => client.on('error', lost));
  // Liveness: this process's worker ids are announced (from a thread of their own, so a busy
  // process is never taken for a dead one); jobs held by a process that went silent (kill -9, lost
  // machine) are unlocked for others instead of waiting graphile-worker's 4 hours.
  const liveness = startLiveness(
    { databaseUrl: config.databaseUrl, databaseSilenceMs: config.databaseSilenceMs, deadAfterMs: config.workerDeadAfterMs, intervalMs: Math.max(200, Math.floor(config.workerDeadAfterMs / 4)) },
    (report) => {
      if (!report.ok) log.warn({ err: report.error }, 'heartbeat failed');
      else if (report.released) log.warn({ jobs: report.released }, 'released the jobs of silent worker processes');
    });
  const events: WorkerEvents = new EventEmitter() as WorkerEvents;
  const workerIds = new Set<string>();
  const announce = (id: string) => {
    workerIds.add(id);
    liveness.announce([...workerIds]);
  };
  events.on('pool:create', ({ workerPool }) => announce(workerPool.id));
  events.on('worker:create', ({ worker }) => announce(worker.workerId));
  // The id the deliveries dispatch claims are locked by (deliver.ts, DispatchClaims), announced
  // with the runner's. Retired when claimed jobs may be held with none of this process running
  // them (a claiming pass whose commit went unanswered, claimed deliveries that could be neither
  // completed nor given back): no longer announced, its jobs are released after WORKER_DEAD_AFTER
  // like a dead process's, and later claims take a fresh id.
  let claimsId = '';
  const retireClaims = () => {
    workerIds.delete(claimsId);
    claimsId = `claims-${randomBytes(10).toString('hex')}`;
    announce(claimsId);
  };
  retireClaims();
  // One task list for every job runner of the process: a runner replaced when the database went
  // away leaves attempts still out, and the next runner's tasks see them (deliver.ts waits for a
  // delivery's earlier attempt here before it attempts it again) and share its tenants' slots.
  const { tasks, claims } = workerTasks(db, config, options.seams, vault, tenantGate.gate);
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
    crontab: [retentionCrontab(config), BILLING_CRONTAB, FUNDING_CRONTAB].filter(Boolean).join('\n'),
    concurrency: config.workerConcurrency,
    noHandleSignals: true,
    pollInterval: config.workerPollIntervalMs,
    taskList: tasks,
  });
  // When the database goes away mid-job, graphile-worker shuts its pool down ("queue is in an
  // inconsistent state"), and that shutdown can hang. Replace the pool at once; the old pool's ids
  // stop being announced, so the jobs it still holds are released after WORKER_DEAD_AFTER like
  // those of a dead process.
  let stopped = false;
  let currentPool = '';
  events.on('pool:create', ({ workerPool }) => (currentPool = workerPool.id));
  let runner = await start().catch(async (error: unknown) => {
    await liveness.stop();
    throw error;
  });
  let replacing = false;
  const replace = async (old: Runner, reason: string) => {
    if (stopped || replacing || old !== runner) return;
    replacing = true;
    log.error({ err: reason }, 'job runner stopped; starting a new one');
    workerIds.clear();
    liveness.announce([]);
    // Claimed deliveries' records may have failed with the database as the runner's jobs did.
    retireClaims();
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
  await liveness.firstBeat;
  const dispatcher = config.webhookDispatchPollMs === 0 ? null : startDispatchLoop(db, {
    batch: DISPATCH_BATCH,
    idleMs: config.webhookDispatchPollMs,
    onError: (error) => log.warn({ err: error.message }, 'webhook dispatch pass failed; retrying'),
    // None while a runner is being replaced.
    claims: { claims, lockedBy: () => (replacing || stopped ? null : claimsId), retire: retireClaims },
    onClaimFailed: (error) => log.warn({ err: error.message }, 'claimed webhook deliveries could not be completed nor given back; released after WORKER_DEAD_AFTER'),
  });
  const metricsServer = await startWorkerMetrics(db, config.workerMetricsPort, config.host);
  log.info({ concurrency: config.workerConcurrency, workers: workerIds.size }, 'worker running');
  return {
    get runner() {
      return runner;
    },
    stop: async () => {
      stopped = true;
      await dispatcher?.stop();
      // (rejects only when this runner had already stopped on its own)
      await runner.stop().catch(() => {});
      metricsServer?.close();
      await Promise.all([db.destroy(), pgPool.end(), tenantGate.close(), liveness.stop()]);
    },
  };
}

if (import.meta.main) {
  await runUntilSignalled('worker', (stopping) => startWorker(loadConfig(), { stopping }), (error) => error instanceof VaultKeyRefused || error instanceof DatabaseWaitOver);
}
