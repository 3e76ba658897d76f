/**
 * A test-only row trigger that makes a write fail inside its statement: a row of `table` written
 * by `op` with `data->>field` equal to `value` raises, so the statement writes nothing.
 */
import type { Db } from '../../api/db/connection.ts';

/** Refuses such writes until the test `t` ends. */
export async function refuseWrite(db: Db, t: { teardown: (fn: () => unknown) => void }, table: string, op: 'insert' | 'update', field: string, value: string): Promise<void> {
  await db.raw(`create function test_refuse_write() returns trigger language plpgsql as $$
    begin
      if new.data->>'${field}' = '${value}' then raise exception 'refused by the test'; end if;
      return new;
    end $$;
    create trigger test_refuse_write before ${op} on ${table} for each row execute function test_refuse_write()`);
  t.teardown(() => db.raw(`drop trigger test_refuse_write on ${table}; drop function test_refuse_write()`));
}
