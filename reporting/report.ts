/**
 * Answers one aggregate query (`fields` with aggregates and/or `group_by`) from the mirror: the
 * ClickHouse counterpart of `aggregate` in api/engine/operations.ts, with the same checks and the
 * same rows, keyed by the expressions exactly as requested. The tenant (and a collection's fixed
 * type) filter the rows outside the client's expression; `FINAL` reads each transaction's latest
 * version only, deleted ones dropped.
 */
import type { Family, Tenant, Version } from '../api/engine/family.ts';
import { aggregateTerms } from '../api/engine/operations.ts';
import type { Json } from '../api/engine/view.ts';
import { toApi } from '../api/schema/values.ts';
import { badRequest } from '../api/errors.ts';
import { transactionShape } from '../api/families/transactions/fields.ts';
import type { ListQuery, Operand } from '../api/query/ast.ts';
import { AGGREGATES, exactMoneyColumn, type ExactMoney } from '../api/query/aggregates.ts';
import { READ_SETTINGS, ROLLUP, rollupDays, rollupTable, rollupWithDaysSql, type Bind, type Rollup } from './columns.ts';
import { ClickHouseCompiler, type Typed } from './compiler.ts';
import type { ReportingStore } from './store.ts';

export interface ReportRequest {
  tenant: Tenant;
  version: Version;
  /** the collection's fixed type, if any */
  type?: string;
  query: ListQuery;
}

export interface CompiledReport {
  sql: string;
  params: Record<string, unknown>;
  /** result key and decoder per requested term, in order */
  columns: Array<{ key: string; alias: string; decode: (raw: unknown) => unknown }>;
  /** it reads the rollup (reporting/columns.ts), not the table's rows */
  rollup: boolean;
  /** the rollup's grain it reads, if it reads the rollup */
  grain?: Rollup['grain']['name'];
}

/** Canonical text of an operand, positions left out: equal expressions, equal keys. */
function expressionKey(node: Operand): string {
  switch (node.kind) {
    case 'field': return `f:${JSON.stringify(node.path)}`;
    case 'call': return `c:${node.fn.toLowerCase()}(${node.args.map(expressionKey).join(',')})`;
    case 'date': return `d:${JSON.stringify(node.value)}`;
    case 'literal': return `l:${JSON.stringify(node.value)}`;
  }
}

function isAggregate(node: Operand): boolean {
  return node.kind === 'call' && AGGREGATES.has(node.fn.toLowerCase());
}

/** What a report reads: the transaction mirror (FINAL: each row's latest version), or another table of the store. */
export interface ReportSource {
  family: Family;
  columns?: ReadonlyMap<string, { name: string }>;
  final: boolean;
  /** a pre-aggregated table beside it (`rollupTable(table)`), read when it covers the query */
  rollup?: Rollup;
}

const MIRROR: ReportSource = { family: transactionShape, final: true, rollup: ROLLUP };

/**
 * One compiler, two tables: a report reads the rollup when every field, filter and grouping of it
 * is kept there (the compiler says NotCovered otherwise), else the table itself. Any failure over
 * the rollup compiles the query over the table, whose answer (or refusal) is the reference.
 * `changedDays`: the tenant's days the rollup has not refreshed since they changed
 * (ReportingStore.changedDays), read from the table instead.
 */
export function compileReport(request: ReportRequest, table: string, source: ReportSource = MIRROR, changedDays: readonly string[] = []): CompiledReport {
  // The coarsest grain that covers the query.
  const rollups = source.rollup ? [...(source.rollup.coarser && changedDays.length === 0 ? [source.rollup.coarser] : []), source.rollup] : [];
  for (const rollup of rollups) {
    try {
      return compileOver(request, source, (bind) => (changedDays.length === 0
        ? `${rollupTable(table)} FINAL`
        : `(${rollupWithDaysSql(table, rollupTable(table), rollupDays(request.tenant, changedDays, bind))})`), rollup);
    } catch {
      // not covered (or refused): a finer grain, then the table's compilation decides
    }
  }
  return compileOver(request, source, () => `${table}${source.final ? ' FINAL' : ''}`);
}

/** `from`: what the query reads, its values bound with the query's own parameters. */
function compileOver(request: ReportRequest, source: ReportSource, from: (bind: Bind) => string, rollup?: Rollup): CompiledReport {
  const { query, version } = request;
  const terms = aggregateTerms(query);
  const compiler = new ClickHouseCompiler(source.family, version, undefined, source.columns, rollup);
  const params = compiler.params;
  const select: string[] = [];

  // Group keys are compiled once and referred to by alias, so a key holding parameters
  // (`attrs[region]`) is the very same expression in SELECT, GROUP BY and ORDER BY.
  const groups = new Map<string, { alias: string; typed: Typed }>();
  query.groupBy.forEach((term, i) => {
    if (!term.expr) throw badRequest('group_by needs an expression', { group_by: 'Name a field or function' });
    const key = expressionKey(term.expr);
    if (groups.has(key)) return;
    const alias = `_g${i}`;
    const typed = compiler.operand(term.expr, false);
    groups.set(key, { alias, typed });
    select.push(`${typed.sql} AS ${alias}`);
  });

  const columns = terms.map((term, i) => {
    const alias = `_c${i}`;
    const group = groups.get(expressionKey(term.expr));
    const typed = group ? { ...group.typed, sql: group.alias } : compiler.operand(term.expr, true);
    const exact = group && typed.type === 'money' ? exactMoneyColumn(group.alias) : typed.exact;
    select.push(`${exact?.sql ?? outputSql(typed)} AS ${alias}`);
    return { key: term.source, alias, decode: decoder(typed, exact, version) };
  });

  const order = query.orderBy.map((term) => {
    const group = groups.get(expressionKey(term.expr));
    if (!group && !isAggregate(term.expr)) {
      throw badRequest(`${term.source} must be grouped or aggregated`, { [term.source]: 'Order by a group_by expression or an aggregate' });
    }
    // Nulls as the Postgres path places them: first ascending for a returned or grouped
    // expression, and Postgres's own default (last ascending) for any other aggregate.
    const shown = group || terms.some((t) => t.source === term.source.replace(/^(asc|desc)\((.*)\)$/, '$2'));
    const nullsFirst = shown ? term.direction === 'asc' : term.direction === 'desc';
    const sql = group ? group.alias : compiler.operand(term.expr, true).sql;
    return `${sql} ${term.direction.toUpperCase()} NULLS ${nullsFirst ? 'FIRST' : 'LAST'}`;
  });
  // Then group order, so an answer is the same from one call to the next, and a limit keeps the
  // groups the Postgres path keeps.
  for (const { alias } of groups.values()) order.push(`${alias} ASC NULLS FIRST`);

  const conditions = [`org_id = ${params.add('String', request.tenant.orgId)}`, `environment = ${params.add('String', request.tenant.environment)}`];
  if (rollup) conditions.push(`${rollup.grain.column} = ${rollup.grain.value}`);
  if (request.type) conditions.push(`type = ${params.add('String', request.type)}`);
  if (query.where) conditions.push(`(${compiler.where(query.where)})`);
  const groupBy = groups.size ? `\nGROUP BY ${[...groups.values()].map((g) => g.alias).join(', ')}` : '';
  const orderBy = order.length ? `\nORDER BY ${order.join(', ')}` : '';
  // Over the rollup a query reads a few thousand rows (and a trailing day's from the mirror): one
  // thread answers as soon as two and spends less (a reader's count on tmpfs 22–23 against 26 CPU ms).
  const sql = `SELECT ${select.join(', ')}
FROM ${from((type, value) => params.add(type, value))}
WHERE ${conditions.join(' AND ')}${groupBy}${orderBy}
LIMIT ${params.add('UInt64', query.limit)} OFFSET ${params.add('UInt64', query.offset)}
SETTINGS max_execution_time = 60, ${READ_SETTINGS}${rollup ? ', max_threads = 1' : ''}`;
  return { sql, params: params.values, columns, rollup: rollup !== undefined, grain: rollup?.grain.name };
}

/** Times travel as text and are read back as instants; everything else as ClickHouse gives it. */
function outputSql(typed: Typed): string {
  return typed.type === 'datetime' ? `toString(${typed.sql})` : typed.sql;
}

export function decodeRows(compiled: CompiledReport, rows: Array<Record<string, unknown>>): Json[] {
  return rows.map((row) => {
    const out: Json = {};
    for (const column of compiled.columns) out[column.key] = column.decode(row[column.alias]);
    return out;
  });
}

export async function runReport(store: ReportingStore, request: ReportRequest): Promise<Json[]> {
  const compiled = compileReport(request, store.table, MIRROR, store.changedDays(request.tenant));
  return decodeRows(compiled, await store.select<Record<string, unknown>>(compiled.sql, compiled.params));
}

// ---------- values: the same API forms as the Postgres path, money exact from integers ----------

function decoder(typed: Typed, exact: ExactMoney | undefined, version: Version): (raw: unknown) => unknown {
  return (raw) => {
    if (raw === null || raw === undefined) return null;
    if (exact) return exact.decode(raw);
    if (typed.type === 'datetime') raw = new Date(`${String(raw).replace(' ', 'T')}Z`);
    if (typed.field && typed.type !== 'aggregate') return toApi(typed.field, version, raw);
    if (raw instanceof Date) return toApi({ store: '', type: 'datetime' }, version, raw);
    if (typed.type === 'date') return String(raw);
    const number = Number(raw);
    return typeof raw === 'string' && Number.isFinite(number) && /^-?\d/.test(raw) && typed.type !== 'text' ? number : raw;
  };
}


