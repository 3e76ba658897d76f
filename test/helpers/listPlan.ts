/** A list as the API runs it (through the engine), with the plan PostgreSQL makes of its very SQL. */
import type { Db, QueryEvent } from '../../api/db/connection.ts';
import type { Tenant } from '../../api/engine/family.ts';

export async function listedWithPlan(db: Db, tenant: Tenant, path: string, query: Array<[string, string]>): Promise<{ ids: string[]; plan: string }> {
  const { list } = await import('../../api/engine/operations.ts');
  const { parseListQuery } = await import('../../api/query/listQuery.ts');
  const { collectionByPath } = await import('../../api/families/index.ts');
  const { createDomainServices } = await import('../../api/domain.ts');
  const { loadConfig } = await import('../../api/config.ts');
  const collection = collectionByPath.get(path)!;
  const table = new RegExp(`from ${collection.family.table}\\b`);
  let captured: QueryEvent | null = null;
  const capture = (q: QueryEvent) => { if (table.test(q.sql)) captured ??= q; };
  db.on('query', capture);
  const ctx = {
    tx: db, tenant, version: 'v1' as const, principal: { kind: 'secret' as const, keyId: 'k', settings: {} },
    domain: createDomainServices(loadConfig({ DATABASE_URL: 'postgres://unused' })), collection,
  };
  const answer = await list(ctx, parseListQuery(query));
  db.off('query', capture);
  if (!captured) throw new Error('the list query was not seen');
  const { sql, bindings } = captured as QueryEvent;
  const explained = await db.raw(`explain (format json) ${sql.replace(/\$\d+/g, '?')}`, bindings as never[]);
  return { ids: answer.values.map((value) => (value as { id: string }).id), plan: JSON.stringify(explained.rows[0]['QUERY PLAN']) };
}

/** A plan's nodes and the indexes they read, in the order the plan names them: what a failed plan assertion prints. */
export function planNodes(plan: string): string {
  return [...plan.matchAll(/"(Index Name|Node Type)":"([^"]+)"/g)].map((m) => m[2]).join(' > ');
}

/** A node of a plan as `EXPLAIN (FORMAT JSON)` gives it (the fields the plan tests read). */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Join Filter'?: number;
  Plans?: PlanNode[];
}

/** The plan's nodes, each before the nodes below it. */
export function everyPlanNode(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(everyPlanNode)];
}

/**
 * A large tenant's rows of `table`, unanalyzed (autovacuum off for the table): `count` of them with
 * ids `${idPrefix}00000001`… in the order of their creation, one second apart, ending now, each of
 * `type` with the data `dataSql` makes of the row number `g`.
 */
export async function seedTenantRows(db: Db, tenant: Tenant, rows: { table: string; idPrefix: string; type: string; dataSql: string; count: number }): Promise<void> {
  await db.raw(`alter table ${rows.table} set (autovacuum_enabled = false)`);
  await db.raw(
    `insert into ${rows.table} (id, org_id, environment, type, data, created_at)
     select ? || lpad(g::text, 8, '0'), ?, ?, ?, ${rows.dataSql}, now() - make_interval(secs => ? - g)
       from generate_series(1, ?) g`,
    [rows.idPrefix, tenant.orgId, tenant.environment, rows.type, rows.count, rows.count]);
}
