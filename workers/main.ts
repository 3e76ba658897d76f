/**
 * The `worker` process: graphile-worker running the task list against DATABASE_URL. On SIGTERM
 * it stops taking jobs, finishes the ones in hand and exits 0.
 */
import pg from 'pg';
import { run, type Runner, type TaskList } from 'graphile-worker';
import { loadConfig, type Config } from '../api/config.ts';
import { createDb, type Db } from '../api/db/connection.ts';
import { createLogger } from '../api/logger.ts';
import { exitOnSignals } from '../api/server.ts';
import { dispatchEvent } from './tasks/dispatchEvent.ts';
import { bankReject, completeProcessing, expireAuthorization } from './tasks/transactionTasks.ts';

export function taskList(db: Db): TaskList {
  return {
    dispatch_event: dispatchEvent(db),
    complete_processing: completeProcessing(db),
    bank_reject: bankReject(db),
    expire_authorization: expireAuthorization(db),
  };
}

export interface RunningWorker {
  runner: Runner;
  stop: () => Promise<void>;
}

export async function startWorker(config: Config): Promise<RunningWorker> {
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set (use `settle up` to run with an embedded database)');
  const log = createLogger(config.logLevel, 'worker');
  const db = createDb(config.databaseUrl, Math.max(2, Math.ceil(config.workerConcurrency / 2)));
  // Our own pool, so a dropped connection (database restart) is logged instead of crashing the process.
  const pgPool = new pg.Pool({ connectionString: config.databaseUrl, max: config.workerConcurrency + 2 });
  const lost = (error: Error) => log.warn({ err: error.message }, 'worker database connection lost');
  pgPool.on('error', lost);
  pgPool.on('connect', (client) => client.on('error', lost));
  const runner = await run({
    pgPool,
    crontab: '',
    concurrency: config.workerConcurrency,
    noHandleSignals: true,
    pollInterval: config.workerPollIntervalMs,
    taskList: taskList(db),
  });
  log.info({ concurrency: config.workerConcurrency }, 'worker running');
  return {
    runner,
    stop: async () => {
      await runner.stop();
      await Promise.all([db.destroy(), pgPool.end()]);
    },
  };
}

if (import.meta.main) {
  const worker = await startWorker(loadConfig());
  exitOnSignals(worker.stop, (message) => console.error(message));
}
