/** Read positions as Postgres states them: the snapshot a reader compares a mirror's position with. */
import { rows, type Db } from './connection.ts';

/**
 * A snapshot taken now (`pg_snapshot` text, `xmin:xmax:xip,…`). Everything committed before the
 * call is visible in it.
 */
export async function currentSnapshot(db: Db): Promise<string> {
  const [row] = await rows<{ snapshot: string }>(db, 'select pg_current_snapshot()::text as snapshot');
  return row.snapshot;
}
