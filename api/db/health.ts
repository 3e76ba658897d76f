/** Whether the database answers at all: the web process's `/healthz`, and the wait for it at start. */
import type { Logger } from 'pino';
import { isDatabaseUnavailable } from '../errors.ts';
import { rows, type Db } from './connection.ts';

/** How often a starting process asks again for a database it cannot reach. */
const START_RETRY_MS = 500;

/** Resolves when the database answers a trivial query; throws when it cannot be reached. */
export async function pingDatabase(db: Db): Promise<void> {
  await rows(db, 'select 1');
}

/**
 * Resolves once the database takes a connection that may write, waiting while it cannot be
 * reached: a process (re)started during a failover, or before its database is up, waits for the
 * promoted primary instead of exiting — a process manager that gives up after a few quick
 * failures (systemd's start limit) would otherwise leave it down. Other errors are thrown.
 */
export async function waitForDatabase(db: Db, log: Logger): Promise<void> {
  for (let told = false; ; told = true) {
    try {
      await pingDatabase(db);
      if (told) log.info('database reached');
      return;
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      if (!told) log.warn({ err: (error as Error).message }, 'waiting for the database');
      await new Promise((resolve) => setTimeout(resolve, START_RETRY_MS));
    }
  }
}
