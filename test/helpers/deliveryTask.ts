/**
 * The worker's `deliver_webhook` task run directly, as graphile-worker would run a job, on a
 * database connection of its own (a test puts a proxy in between to take the database away), and
 * the delivery jobs the dispatcher made, to run with it, for the org's webhook to a receiver the
 * test answers itself.
 */
import { loadConfig } from '../../api/config.ts';
import { createDb, rows, type Db } from '../../api/db/connection.ts';
import { createLogger } from '../../api/logger.ts';
import { openVault } from '../../api/vaultKeys.ts';
import { taskList } from '../../workers/main.ts';
import { dispatchEventBatch } from '../../workers/webhooks/dispatch.ts';
import http from 'node:http';
import type { Test } from 'tap';
import type { TestApi } from './api.ts';

export interface DeliveryJobRow {
  id: string;
  payload: unknown;
}

/** Dispatches every event recorded so far, and answers the delivery jobs, oldest first. */
export async function dispatchedDeliveryJobs(db: Db): Promise<DeliveryJobRow[]> {
  while (!(await dispatchEventBatch(db, 100)).caughtUp);
  return rows<DeliveryJobRow>(db, `select id::text as id, payload from graphile_worker._private_jobs
      where task_id = (select id from graphile_worker._private_tasks where identifier = 'deliver_webhook') order by id`);
}

/**
 * Runs a delivery job's task on `databaseUrl` (the worker's settings plus `env`); `lockedBy`: the
 * worker id the job is locked under (null: none, so it takes no companions along).
 */
export async function deliveryTask(t: Test, databaseUrl: string, env: Record<string, string> = {}): Promise<(job: DeliveryJobRow, lockedBy?: string | null) => Promise<void>> {
  const db = createDb(databaseUrl, 4);
  t.teardown(() => db.destroy());
  const config = loadConfig({ LOG_LEVEL: 'silent', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT: '30s', ...env, DATABASE_URL: databaseUrl });
  const deliver = taskList(db, config, {}, await openVault(config, db, createLogger('silent', 'test'))).deliver_webhook!;
  return async (job, lockedBy = null) => {
    await deliver(job.payload, { job: { id: job.id, locked_by: lockedBy, job_queue_id: null } } as never);
  };
}

/**
 * A loopback receiver whose requests `answer` handles (given their 1-based number), and the api
 * key's org's `processing_status` webhook to it; answers how many requests arrived so far.
 */
export async function webhookReceiver(t: Test, api: TestApi, answer: (res: http.ServerResponse, number: number) => void): Promise<() => number> {
  let requests = 0;
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(res, ++requests));
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    receiver.closeAllConnections();
    receiver.close(() => resolve());
  }));
  const created = await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook` } });
  if (created.status !== 200) throw new Error(`webhook: ${created.status} ${JSON.stringify(created.body)}`);
  return () => requests;
}
