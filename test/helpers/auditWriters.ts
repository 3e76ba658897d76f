/**
 * Which writer wrote each audit event, read from a test-only trigger on audit_events that notes
 * its trigger depth in `test_audit_writers` (event id, object id, depth): 1 for a statement that
 * writes its rows' events itself, 2 for the audit trigger inside the statement that changed them.
 */
import type { Db } from '../../api/db/connection.ts';

export const BY_STATEMENT = 1;
export const BY_TRIGGER = 2;

export async function noteAuditWriters(db: Db): Promise<void> {
  await db.raw(`
    create table test_audit_writers (event_id text, object_id text, depth int);
    create function test_note_audit_writer() returns trigger language plpgsql as $$
    begin
      insert into test_audit_writers values (new.id, new.data->>'object_id', pg_trigger_depth());
      return new;
    end $$;
    create trigger test_note_audit_writer before insert on audit_events for each row execute function test_note_audit_writer();`);
}
