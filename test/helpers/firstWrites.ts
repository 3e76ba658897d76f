/**
 * Whether a statement was the first of its transaction to write, read from a test-only statement
 * trigger on a family's table that notes, before the statement writes, whether its transaction had
 * no id yet (`test_first_writes`: table, operation, alone). A write planned on the pool and
 * written by one statement is alone; one after a locking read or another write of its
 * transaction is not.
 */
import type { Db } from '../../api/db/connection.ts';

export type WriteOp = 'insert' | 'update' | 'delete';

/** Notes the first-write flag of each statement that runs `ops` on each of `tables`. */
export async function noteFirstWrites(db: Db, tables: string[], ops: WriteOp[]): Promise<void> {
  await db.raw(`
    create table test_first_writes (table_name text, op text, alone boolean);
    create function test_note_first_write() returns trigger language plpgsql as $$
    begin
      insert into test_first_writes values (tg_table_name, lower(tg_op), pg_current_xact_id_if_assigned() is null);
      return null;
    end $$`);
  for (const table of tables) {
    await db.raw(`create trigger test_note_first_write before ${ops.join(' or ')} on ${table} for each statement execute function test_note_first_write()`);
  }
}

/** Whether each statement that wrote rows of `table` by `op` since the last call was its transaction's first write. */
export async function writesAlone(db: Db, table: string, op: WriteOp): Promise<boolean[]> {
  const noted = (await db.raw('delete from test_first_writes where table_name = ? and op = ? returning alone', [table, op])).rows;
  return noted.map((row: { alone: boolean }) => row.alone);
}
