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
import { JSONB_LIST, jsonList } from './jsonList.ts';

/**
 * A webhook trigger's name as a family declares it. Only `trigger()` makes one, and each family
 * calls it once per trigger it fires, in its own `triggers.ts`; its declaration and its writers use
 * the constants, so an event can name no trigger a webhook could not subscribe to.
 */
export type Trigger = string & { readonly declaredTrigger: true };

export function trigger<const T extends string>(name: T): T & Trigger {
  return name as T & Trigger;
}

export interface EventDraft {
  trigger: Trigger;
  objectType: string;
  objectId: string;
  value: Record<string, unknown>;
}

/**
 * An `<object>:status` event (`payment_link:status`, `intent:status`, `payment_activation:status`,
 * `entity:status`, `webhook:status`) or `processing_status`: its `triggered_on.value` is the new
 * status itself, a string, as the README's trigger table gives it.
 */
export function statusEvent(trigger: Trigger, objectType: string, objectId: string, status: string | null): EventDraft {
  return { trigger, objectType, objectId, value: status as unknown as Record<string, unknown> };
}

export interface EventTenant {
  orgId: string;
  environment: string;
}

/**
 * The one insert of events, however many: a statement of its own (`recordEvents`) or one
 * data-modifying CTE of a larger statement (a payment's, api/families/transactions/repository.ts).
 */
export function eventsInsert(tenant: EventTenant, drafts: EventDraft[]): { sql: string; bindings: unknown[]; ids: string[] } {
  return tenantsEventsInsert([{ tenant, drafts }]);
}

/** How `tenantsEventsInsert` writes: test events, or only the events of the changes a statement made. */
export interface EventsInsertOptions {
  /** test events, which the dispatcher never follows */
  test?: boolean;
  /**
   * A relation of the statement with a column `n`, the 1-based position of a written change in
   * `groups`: only the events of those changes are written (a change whose row it skipped has none).
   */
  writtenIn?: string;
}

/** `eventsInsert` for the events of several tenants' changes written by one statement (a group of payments, of updates). */
export function tenantsEventsInsert(groups: Array<{ tenant: EventTenant; drafts: EventDraft[] }>, options: EventsInsertOptions = {}): { sql: string; bindings: unknown[]; ids: string[] } {
  const rows = groups.flatMap(({ tenant, drafts }, i) => drafts.map((draft) => ({ tenant, draft, n: i + 1 })));
  const ids = rows.map(() => newId('evt'));
  // A test event has no txid: the dispatcher follows only events with one (migration 20261201000100).
  const [testColumns, testValues] = options.test ? [', test, txid', ', true, null'] : ['', ''];
  const [nColumn, nType, written] = options.writtenIn ? [', n', ', ?::bigint[]', ` where e.n in (select n from ${options.writtenIn})`] : ['', '', ''];
  return {
    sql: `insert into events (id, org_id, environment, trigger, object_type, object_id, value${testColumns})
     select id, org_id, environment, trigger, object_type, object_id, value${testValues}
       from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ${JSONB_LIST}${nType}) as e(id, org_id, environment, trigger, object_type, object_id, value${nColumn})${written}`,
    bindings: [
      ids,
      rows.map((r) => r.tenant.orgId),
      rows.map((r) => r.tenant.environment),
      rows.map((r) => r.draft.trigger),
      rows.map((r) => r.draft.objectType),
      rows.map((r) => r.draft.objectId),
      jsonList(rows.map((r) => JSON.stringify(r.draft.value))),
      ...(options.writtenIn ? [rows.map((r) => r.n)] : []),
    ],
    ids,
  };
}

export async function recordEvents(tx: Db, tenant: EventTenant, drafts: EventDraft[]): Promise<string[]> {
  if (drafts.length === 0) return [];
  const insert = eventsInsert(tenant, drafts);
  await tx.raw(insert.sql, insert.bindings);
  return insert.ids;
}

/**
 * A test event: written like any other, but never dispatched, so no webhook receives it unless its
 * writer enqueues a delivery of it (api/families/webhooks/testEvent.ts).
 */
export async function recordTestEvent(tx: Db, tenant: EventTenant, draft: EventDraft): Promise<string> {
  const insert = tenantsEventsInsert([{ tenant, drafts: [draft] }], { test: true });
  await tx.raw(insert.sql, insert.bindings);
  return insert.ids[0];
}
