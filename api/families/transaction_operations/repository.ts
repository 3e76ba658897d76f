/** Operation rows: the one writer of `transaction_operations`, each row with its events. */
import { rows, type Db } from '../../db/connection.ts';
import { eventsInsert, type EventDraft, type EventTenant } from '../../db/events.ts';
import { JSONB_LIST, jsonList } from '../../db/jsonList.ts';
import { operationData, operationEvents, type OperationDraft } from './operations.ts';

/** The insert of operation rows, for a data-modifying CTE of a larger statement (a payment's). */
export function operationsInsert(groups: Array<{ tenant: EventTenant; operations: OperationDraft[] }>): { sql: string; bindings: unknown[] } {
  const flat = groups.flatMap(({ tenant, operations }) => operations.map((op) => ({ tenant, op })));
  return {
    sql: `insert into transaction_operations (id, org_id, environment, type, data)
     select id, org_id, environment, type, data from unnest(?::text[], ?::text[], ?::text[], ?::text[], ${JSONB_LIST}) as o(id, org_id, environment, type, data)`,
    bindings: [
      flat.map((r) => r.op.id), flat.map((r) => r.tenant.orgId), flat.map((r) => r.tenant.environment),
      flat.map((r) => r.op.type), jsonList(flat.map((r) => JSON.stringify(operationData(r.op)))),
    ],
  };
}

/** Operation rows with their events, and any other events of the same change, in one statement. */
export async function recordOperations(db: Db, tenant: EventTenant, operations: OperationDraft[], others: EventDraft[] = []): Promise<void> {
  const events = [...others, ...operationEvents(operations)];
  if (events.length === 0) return;
  const ops = operationsInsert([{ tenant, operations }]);
  const evented = eventsInsert(tenant, events);
  await rows(db, `with op as (${ops.sql}), event as (${evented.sql}) select 1`, [...ops.bindings, ...evented.bindings]);
}
