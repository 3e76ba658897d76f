/**
 * SQL for every object family table (id, org_id, environment, type, data, created_at,
 * modified_at). The tenant condition is always added here, outside the client's expression.
 */
import { AUDIT_SETTING_SQL, currentAuditSetting } from './auditContext.ts';
import { rows as query, type Db, type Sql } from './connection.ts';
import { STORED_ROW, type StoredObject } from './storedRow.ts';
import { tenantCheck, tenantScan, type Tenant } from './tenant.ts';

export interface SelectSpec {
  where: Sql | null;
  /** fixed type of the collection (`/customers`) */
  type?: string;
  orderBy: Sql[];
  limit: number;
  offset: number;
  forUpdate?: boolean;
}

const ROW_COLUMNS = STORED_ROW;

/** A scan of the tenant's rows (lists, aggregates): served by the tenant indexes. */
function tenantWhere(tenant: Tenant, type: string | undefined): Sql {
  return withType(tenantScan(tenant), type);
}

/** The tenant of a lookup by id: served by the primary key only (api/db/tenant.ts). */
function tenantOfId(tenant: Tenant, type: string | undefined): Sql {
  return withType(tenantCheck(tenant), type);
}

function withType(base: Sql, type: string | undefined): Sql {
  return type ? { sql: `${base.sql} and type = ?`, bindings: [...base.bindings, type] } : base;
}

function conditions(tenant: Tenant, spec: Pick<SelectSpec, 'where' | 'type'>): Sql {
  const base = tenantWhere(tenant, spec.type);
  if (!spec.where) return base;
  return { sql: `${base.sql} and (${spec.where.sql})`, bindings: [...base.bindings, ...spec.where.bindings] };
}

function selectSql(table: string, tenant: Tenant, spec: SelectSpec): Sql {
  const where = conditions(tenant, spec);
  const order = spec.orderBy.length ? spec.orderBy : [{ sql: 'created_at asc', bindings: [] }];
  // Ties broken by id in the direction of the last term, so one index scan (either way) serves it.
  const tiebreak = /\sdesc(\s|$)/.test(order[order.length - 1].sql) ? 'id desc' : 'id asc';
  const orderSql = [...order.map((o) => o.sql), tiebreak].join(', ');
  return {
    sql: `select ${ROW_COLUMNS} from ${table} where ${where.sql} order by ${orderSql} limit ? offset ?${spec.forUpdate ? ' for update' : ''}`,
    bindings: [...where.bindings, ...order.flatMap((o) => o.bindings), spec.limit, spec.offset],
  };
}

export async function selectObjects(db: Db, table: string, tenant: Tenant, spec: SelectSpec): Promise<StoredObject[]> {
  const select = selectSql(table, tenant, spec);
  return query<StoredObject>(db, select.sql, select.bindings);
}

/** How many rows a selection holds, counting no further than `atMost` (an export's ceiling). */
export async function countObjects(db: Db, table: string, tenant: Tenant, spec: Pick<SelectSpec, 'where' | 'type'>, atMost: number): Promise<number> {
  const where = conditions(tenant, spec);
  const found = await query<{ n: string }>(db, `select count(*) as n from (select 1 from ${table} where ${where.sql} limit ?) as matching`, [...where.bindings, atMost]);
  return Number(found[0].n);
}

/**
 * Hands the selected rows to `each` a batch at a time through a cursor, in one read-only
 * snapshot, so an export of any size holds one batch in memory. `each` may wait (for the client
 * to take what was sent); it answers false to stop early.
 */
export async function streamObjects(db: Db, table: string, tenant: Tenant, spec: SelectSpec, batchSize: number, each: (rows: StoredObject[]) => Promise<boolean>): Promise<void> {
  const select = selectSql(table, tenant, spec);
  await db.transaction(async (tx) => {
    await tx.raw(`declare export_rows no scroll cursor for ${select.sql}`, select.bindings);
    for (;;) {
      const batch = (await tx.raw(`fetch forward ${Math.max(1, Math.floor(batchSize))} from export_rows`)).rows as StoredObject[];
      if (batch.length === 0 || !(await each(batch))) break;
    }
    await tx.raw('close export_rows');
  }, { isolationLevel: 'repeatable read', readOnly: true });
}

export interface AggregateSpec {
  select: Sql[];
  where: Sql | null;
  type?: string;
  groupBy: Sql[];
  orderBy: Sql[];
  limit: number;
  offset: number;
}

/** Rows of computed columns named c0, c1, … in the order of `select`. */
export async function aggregateObjects(db: Db, table: string, tenant: Tenant, spec: AggregateSpec): Promise<Array<Record<string, unknown>>> {
  const where = conditions(tenant, spec);
  const select = spec.select.map((s, i) => `${s.sql} as c${i}`).join(', ');
  const group = spec.groupBy.length ? ` group by ${spec.groupBy.map((g) => g.sql).join(', ')}` : '';
  const order = spec.orderBy.length ? ` order by ${spec.orderBy.map((o) => o.sql).join(', ')}` : '';
  return query(db,
    `select ${select} from ${table} where ${where.sql}${group}${order} limit ? offset ?`,
    [...spec.select.flatMap((s) => s.bindings), ...where.bindings, ...spec.groupBy.flatMap((g) => g.bindings), ...spec.orderBy.flatMap((o) => o.bindings), spec.limit, spec.offset],
  );
}

/** The lookup by id: its plan is the primary key whatever the statistics (checked in test/lookup-plans.test.ts). */
export function objectByIdSql(table: string, tenant: Tenant, id: string, options: { type?: string; forUpdate?: boolean } = {}): Sql {
  const where = tenantOfId(tenant, options.type);
  return { sql: `select ${ROW_COLUMNS} from ${table} where id = ? and ${where.sql}${options.forUpdate ? ' for update' : ''}`, bindings: [id, ...where.bindings] };
}

export async function selectObjectById(db: Db, table: string, tenant: Tenant, id: string, options: { type?: string; forUpdate?: boolean } = {}): Promise<StoredObject | null> {
  const lookup = objectByIdSql(table, tenant, id, options);
  const found = await query<StoredObject>(db, lookup.sql, lookup.bindings);
  return found[0] ?? null;
}

/** Locks and returns the rows of the given ids that belong to the tenant, in id order (no deadlocks between batches). */
export async function lockObjectsByIds(db: Db, table: string, tenant: Tenant, ids: string[], type?: string): Promise<StoredObject[]> {
  const where = tenantOfId(tenant, type);
  const found = await query<StoredObject>(db,
    `select ${ROW_COLUMNS} from ${table} where id = any(?::text[]) and ${where.sql} order by id for update`,
    [ids, ...where.bindings],
  );
  return found;
}

/** Inserts rows as the actor of the work under way, also when it is one statement outside a transaction. */
export async function insertObjects(db: Db, table: string, tenant: Tenant, rows: StoredObject[]): Promise<StoredObject[]> {
  if (rows.length === 0) return [];
  const found = await query<StoredObject>(db,
    `insert into ${table} (id, org_id, environment, type, data)
     select id, ?, ?, type, data from unnest(?::text[], ?::text[], ?::jsonb[]) with ordinality as r(id, type, data, n),
            (select ${AUDIT_SETTING_SQL}) as actor
     order by n
     returning ${ROW_COLUMNS}`,
    [tenant.orgId, tenant.environment, rows.map((r) => r.id), rows.map((r) => r.type), rows.map((r) => JSON.stringify(r.data)), currentAuditSetting()],
  );
  const byId = new Map<string, StoredObject>(found.map((r) => [r.id, r]));
  return rows.map((r) => byId.get(r.id)!);
}
