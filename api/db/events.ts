/**
 * The transactional outbox. `recordEvents` runs inside the caller's database transaction: the
 * event rows and their graphile-worker jobs commit or roll back with the change itself.
 */
import { newId } from '../ids.ts';
import type { Db } from './connection.ts';

export interface EventDraft {
  trigger: string;
  objectType: string;
  objectId: string;
  value: Record<string, unknown>;
}

export interface EventTenant {
  orgId: string;
  environment: string;
}

export async function recordEvents(tx: Db, tenant: EventTenant, drafts: EventDraft[]): Promise<string[]> {
  if (drafts.length === 0) return [];
  const ids = drafts.map(() => newId('evt'));
  // One statement for the rows and one for the jobs, however many events: bulk writes stay cheap.
  await tx.raw(
    `insert into events (id, org_id, environment, trigger, object_type, object_id, value)
     select id, ?, ?, trigger, object_type, object_id, value
       from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::jsonb[]) as e(id, trigger, object_type, object_id, value)`,
    [
      tenant.orgId,
      tenant.environment,
      ids,
      drafts.map((d) => d.trigger),
      drafts.map((d) => d.objectType),
      drafts.map((d) => d.objectId),
      drafts.map((d) => JSON.stringify(d.value)),
    ],
  );
  await tx.raw(
    `select graphile_worker.add_jobs(array(
       select row('dispatch_event', json_build_object('event_id', id), null, null, null, null, null, null)::graphile_worker.job_spec
         from unnest(?::text[]) as id))`,
    [ids],
  );
  return ids;
}

/** Marks an event handed to dispatch; returns false when it was already dispatched or is unknown. */
export async function markDispatched(db: Db, eventId: string): Promise<boolean> {
  const result = await db.raw('update events set dispatched_at = now() where id = ? and dispatched_at is null', [eventId]);
  return (result.rowCount ?? 0) > 0;
}
