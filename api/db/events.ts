/**
 * The transactional outbox. `recordEvents` runs inside the caller's database transaction: the
 * event rows and a dispatch job commit or roll back with the change itself.
 *
 * The job is keyed to one of DISPATCH_SHARDS shards in preserve_run_at mode: while a shard's job
 * waits, more events only touch it (no new row, no NOTIFY); once it runs, the next event adds a
 * fresh one. A NOTIFY per event would make every committing transaction queue on Postgres's
 * notification lock; this way a burst of events costs a handful of jobs, each dispatching a batch.
 */
import { newId } from '../ids.ts';
import type { Db } from './connection.ts';

/** Dispatch jobs events spread over; more shards, less waiting on one job row under concurrent writes. */
export const DISPATCH_SHARDS = 32;

/**
 * The shard is chosen by the writing transaction's id, so every event of one transaction (ours and
 * those the operations trigger writes) touches the same job row: two job rows per transaction,
 * taken in different orders by concurrent transactions, would deadlock.
 */
export const DISPATCH_JOB_KEY = `'dispatch:' || (pg_current_xact_id()::text::bigint % ${DISPATCH_SHARDS})`;

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
  // One statement, however many events: the rows, then the shard's dispatch job.
  await tx.raw(
    `with inserted as (
       insert into events (id, org_id, environment, trigger, object_type, object_id, value)
       select id, ?, ?, trigger, object_type, object_id, value
         from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::jsonb[]) as e(id, trigger, object_type, object_id, value)
       returning id)
     select (select count(*) from inserted) as n,
            (graphile_worker.add_job('dispatch_events', '{}'::json, job_key => ${DISPATCH_JOB_KEY}, job_key_mode => 'preserve_run_at')).id as job`,
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
