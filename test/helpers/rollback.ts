/**
 * The repository tier (graphile-worker's `withTransaction`, immich's medium tests): a test calls
 * the real repository functions inside a transaction that is rolled back when it ends, so tests
 * of one file share a database without seeing each other's rows and leave nothing behind.
 */
import type { Test } from 'tap';
import { createDb, type Db } from '../../api/db/connection.ts';
import { freshDatabase } from './db.ts';

/** A migrated database of this test file, with a small pool, closed and dropped when the file ends. */
export async function repositoryDatabase(t: Test): Promise<Db> {
  const db = createDb(await freshDatabase(t), 2);
  // Registered after freshDatabase's drop, so it runs first (tap tears down in reverse order).
  t.teardown(() => db.destroy());
  return db;
}

const ROLLBACK = Symbol('rollback');

/** Runs `work` in a transaction and rolls it back, whatever `work` did; resolves with what `work` returned. */
export async function withRollback<T>(db: Db, work: (tx: Db) => Promise<T>): Promise<T> {
  let result: T | undefined;
  try {
    await db.transaction(async (tx) => {
      result = await work(tx);
      throw ROLLBACK;
    });
  } catch (error) {
    if (error !== ROLLBACK) throw error;
  }
  return result as T;
}
