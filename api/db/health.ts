/** Whether the database answers at all: the web process's `/healthz`. */
import { rows, type Db } from './connection.ts';

/** Resolves when the database answers a trivial query; throws when it cannot be reached. */
export async function pingDatabase(db: Db): Promise<void> {
  await rows(db, 'select 1');
}
