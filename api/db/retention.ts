/**
 * SQL of retention: rows past their keeping time are deleted a batch at a time, each batch one
 * short statement that locks only the rows it deletes (`skip locked`: a row another transaction
 * holds waits for the next run). Each function returns how many rows its batch deleted; the
 * retention task (workers/tasks/retention.ts) repeats a batch until it comes back short.
 *
 * What is never deleted, whatever its age: an event not yet dispatched, and an event with a
 * delivery still pending (its attempts continue on their own schedule).
 */
import { rows, type Db } from './connection.ts';

/** Rows per statement: small enough that no batch holds its locks for long. */
export const RETENTION_BATCH = 5000;

async function count(db: Db, sql: string, bindings: unknown[]): Promise<number> {
  const [row] = await rows<{ deleted: number }>(db, sql, bindings);
  return Number(row.deleted);
}

/** Idempotency records created more than `keepMs` ago, done or abandoned. */
export function deleteExpiredIdempotencyKeys(db: Db, keepMs: number, limit = RETENTION_BATCH): Promise<number> {
  return count(db,
    `with doomed as (
       select org_id, environment, key from idempotency_keys
        where created_at < now() - make_interval(secs => ? / 1000.0)
        limit ? for update skip locked),
     deleted as (
       delete from idempotency_keys k using doomed
        where (k.org_id, k.environment, k.key) = (doomed.org_id, doomed.environment, doomed.key)
        returning 1)
     select count(*)::int as deleted from deleted`,
    [keepMs, limit]);
}

/** Webhook delivery logs (one row per attempt) created more than `keepMs` ago. */
export function deleteExpiredWebhookLogs(db: Db, keepMs: number, limit = RETENTION_BATCH): Promise<number> {
  return count(db,
    `with doomed as (
       select id from webhook_logs
        where created_at < now() - make_interval(secs => ? / 1000.0)
        limit ? for update skip locked),
     deleted as (delete from webhook_logs l using doomed where l.id = doomed.id returning 1)
     select count(*)::int as deleted from deleted`,
    [keepMs, limit]);
}

/**
 * The tenants that have events, from the tenant index (`events_by_tenant_created`): a walk that
 * asks it for each next tenant key after the last, one index probe per tenant, instead of reading
 * every event to find them.
 */
const EVENT_TENANTS = `with recursive tenants as (
    select min(tenant_key(org_id, environment)) as key from events
    union all
    select (select min(tenant_key(e.org_id, e.environment)) from events e where tenant_key(e.org_id, e.environment) > t.key)
      from tenants t where t.key is not null)
  select key from tenants where key is not null`;

/**
 * Events created more than `keepMs` ago that were dispatched and have no pending delivery, with
 * their finished deliveries (delivered, failed, cancelled). A resend that starts a new series on
 * one of them meanwhile makes the batch fail on the foreign key, never lose the delivery; the
 * next run skips that event. The old events are found tenant by tenant in the tenant index by
 * creation time, so events need no index of their own on creation time alone.
 */
export function expiredEventsStatement(keepMs: number, limit = RETENTION_BATCH): { sql: string; bindings: unknown[] } {
  return {
    sql: `with doomed as (
       select e.id from events e
        where tenant_key(e.org_id, e.environment) = any(array(${EVENT_TENANTS}))
          and e.created_at < now() - make_interval(secs => ? / 1000.0)
          -- dispatched: before the dispatch position (or marked, by the dispatcher before it had one)
          and (e.dispatched_at is not null or pg_visible_in_snapshot(e.txid, (select dispatched from webhook_dispatch_position)))
          and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.state = 'pending')
        limit ? for update of e skip locked),
     -- by key, whatever the statistics say of the batch's size: never a join that reads every event
     finished as (delete from webhook_deliveries d where d.event_id = any(array(select id from doomed)) and d.state <> 'pending' returning 1),
     deleted as (delete from events e where e.id = any(array(select id from doomed)) returning 1)
     select count(*)::int as deleted, (select count(*) from finished) as deliveries from deleted`,
    bindings: [keepMs, limit],
  };
}

export function deleteExpiredEvents(db: Db, keepMs: number, limit = RETENTION_BATCH): Promise<number> {
  const statement = expiredEventsStatement(keepMs, limit);
  return count(db, statement.sql, statement.bindings);
}

/**
 * Audit events created more than `keepMs` ago, through the one function the append-only table
 * lets delete (migration 20261126000300).
 */
export function deleteExpiredAuditEvents(db: Db, keepMs: number, limit = RETENTION_BATCH): Promise<number> {
  return count(db, `select prune_audit_events(now() - make_interval(secs => ? / 1000.0), ?) as deleted`, [keepMs, limit]);
}
