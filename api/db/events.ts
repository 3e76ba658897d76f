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
  // One statement, however many events: the rows, then a dispatch job per row.
  await tx.raw(
    `with inserted as (
       insert into events (id, org_id, environment, trigger, object_type, object_id, value)
       select id, ?, ?, trigger, object_type, object_id, value
         from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::jsonb[]) as e(id, trigger, object_type, object_id, value)
       returning id)
     select graphile_worker.add_jobs(array(
       select row('dispatch_event', json_build_object('event_id', id), null, null, null, null, null, null)::graphile_worker.job_spec
         from inserted))`,
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
  return ids;
}
