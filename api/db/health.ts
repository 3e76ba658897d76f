/** Whether the database answers at all: the web process's `/healthz`, and the wait for it at start. */
import type { Logger } from 'pino';
import { isDatabaseUnavailable } from '../errors.ts';
import { rows, type Db } from './connection.ts';
import { databaseHosts } from './primary.ts';

/** How often a starting process asks again for a database it cannot reach. */
const START_RETRY_MS = 500;

/** Resolves when the database answers a trivial query; throws when it cannot be reached. */
export async function pingDatabase(db: Db): Promise<void> {
  await rows(db, 'select 1');
}

export interface DatabaseWait {
  /** the DATABASE_URL, whose hosts the log names */
  url: string;
  /** how long to wait at most (SETTLE_DATABASE_WAIT); 0 asks once */
  waitMs: number;
  /** aborted when the process is told to stop while it waits */
  stopping?: AbortSignal;
}

/** A start that waited SETTLE_DATABASE_WAIT and found no database that takes it: the operator's to look at. */
export class DatabaseWaitOver extends Error {
  readonly code = '08001';
  constructor(waitMs: number, last: unknown) {
    super(`the database could not be reached in ${waitMs / 1000} s (SETTLE_DATABASE_WAIT): ${(last as Error).message}`);
  }
}

/** A ping cut short by the deadline. */
const TOO_LATE = new Error('the database did not answer before the deadline');

/**
 * Resolves once the database takes a connection (with several hosts, one that accepts writes),
 * waiting up to `waitMs` while it cannot be reached: a process (re)started during a failover, or
 * before its database is up, waits for the promoted primary instead of exiting, which a process
 * manager that gives up after a few quick failures (systemd's start limit) would leave down. The
 * wait is logged once, naming the hosts. Past `waitMs` it throws DatabaseWaitOver with the last
 * error; errors other than an unreachable database, and the abort of `stopping`, are thrown as
 * they come.
 */
export async function waitForDatabase(db: Db, log: Logger, wait: DatabaseWait): Promise<void> {
  const deadline = performance.now() + wait.waitMs;
  let last: unknown = null;
  for (;;) {
    wait.stopping?.throwIfAborted();
    try {
      // The first attempt takes as long as a connection attempt does; later ones end at the deadline.
      await (last ? within(pingDatabase(db), deadline - performance.now(), tooLate, wait.stopping) : pingDatabase(db));
      if (last) log.info({ hosts: databaseHosts(wait.url) }, 'database reached');
      return;
    } catch (error) {
      if (error !== TOO_LATE && !isDatabaseUnavailable(error)) throw error;
      if (wait.waitMs === 0) throw error;
      if (!last) log.warn({ hosts: databaseHosts(wait.url), waitMs: wait.waitMs, err: (error as Error).message }, 'waiting for the database');
      if (error !== TOO_LATE) last = error;
      if (performance.now() >= deadline) throw new DatabaseWaitOver(wait.waitMs, last);
      await within(new Promise<void>(() => {}), Math.min(START_RETRY_MS, deadline - performance.now()), () => undefined, wait.stopping);
    }
  }
}

/**
 * `attempt`'s outcome, unless `ms` pass first (then `late`'s: a host that drops packets holds a
 * connection attempt long) or `stopping` aborts (its reason is thrown).
 */
function within<T>(attempt: Promise<T>, ms: number, late: () => T, stopping?: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const aborted = () => finish(() => reject(stopping!.reason));
    const timer = setTimeout(() => finish(() => {
      try {
        resolve(late());
      } catch (error) {
        reject(error);
      }
    }), Math.max(0, ms));
    stopping?.addEventListener('abort', aborted, { once: true });
    function finish(settle: () => void) {
      clearTimeout(timer);
      stopping?.removeEventListener('abort', aborted);
      settle();
    }
    attempt.then((value) => finish(() => resolve(value)), (error: unknown) => finish(() => reject(error)));
  });
}

function tooLate(): never {
  throw TOO_LATE;
}
