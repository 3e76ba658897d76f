/**
 * The transactional outbox. `recordEvents` runs inside the caller's database transaction: the
 * event rows commit or roll back with the change itself, and nothing else is written. The
 * worker's dispatcher follows the outbox on its own (workers/webhooks/dispatchLoop.ts), by the
 * writing transaction's id in each row's `txid` (a column default), so an event is written once
 * and never updated, and a writer neither enqueues a job nor NOTIFYs (either would make
 * concurrent commits queue on one row or lock).
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
  // One statement, however many events.
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
  return ids;
}
