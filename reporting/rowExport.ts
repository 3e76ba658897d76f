/**
 * Rows of transactions out of the mirror as a typed file (`GET /transactions?format=parquet`):
 * the same rows and values as the CSV of the same query (the default fields, or those named),
 * money as Decimal(18, 2) in major units, times as timestamps, from ClickHouse's own Parquet
 * writer. Fields the mirror does not hold (lists and free-form json) are the CSV's alone.
 */
import { apiPath, appliesTo, type Tenant, type Version } from '../api/engine/family.ts';
import { badRequest } from '../api/errors.ts';
import { transactionShape } from '../api/families/transactions/fields.ts';
import type { ListQuery } from '../api/query/ast.ts';
import { COLUMN_BY_STORE } from './columns.ts';
import { ClickHouseCompiler } from './compiler.ts';

export interface RowExportRequest {
  tenant: Tenant;
  version: Version;
  type?: string;
  query: ListQuery;
}

export interface CompiledExport {
  /** the rows, without a FORMAT clause */
  sql: string;
  /** how many rows match (an export checks its ceiling first) */
  countSql: string;
  params: Record<string, unknown>;
}

function quoted(name: string): string {
  return `\`${name.replace(/`/g, '')}\``;
}

/** One API path's column: the mirror's column converted to the API's type, or null when it is not mirrored. */
function exportColumn(path: string, version: Version): string | null {
  if (path === 'object') return `'transaction' AS object`;
  if (path === 'id') return 'id';
  const field = transactionShape.fields.find((f) => apiPath(f, version) === path && !f.writeOnly);
  const column = field && COLUMN_BY_STORE.get(field.store);
  if (!field || !column) return null;
  const types = field.types ? `type IN (${field.types.map((t) => `'${t}'`).join(', ')})` : null;
  let value = column.name;
  if (field.type === 'money') value = `toDecimal64(${column.name}, 2) / 100`;
  else if (field.type === 'datetime') value = `toDateTime64(${column.name}, 0, 'UTC')`;
  // A field of other types is absent from a row, as the API leaves it out.
  if (types && !appliesTo(field, undefined)) value = `if(${types}, ${value}, NULL)`;
  return `${value} AS ${quoted(path)}`;
}

/** The columns of `*`: every default, mirrored field of the version, in declaration order. */
function defaultPaths(version: Version): string[] {
  const paths = ['id', 'object'];
  for (const field of transactionShape.fields) {
    const path = apiPath(field, version);
    if (!path || field.writeOnly || field.nonDefault || paths.includes(path) || !COLUMN_BY_STORE.get(field.store)) continue;
    paths.push(path);
  }
  return paths;
}

export function compileRowExport(request: RowExportRequest, table: string, limit: number): CompiledExport {
  const { query, version } = request;
  const compiler = new ClickHouseCompiler(transactionShape, version);
  const params = compiler.params;
  const paths: string[] = [];
  for (const term of query.fields ?? [{ expr: null, source: '*' }]) {
    if (term.expr !== null && term.expr.kind !== 'field') throw badRequest('A Parquet export takes fields, not expressions: use format=csv for a report', { fields: term.source });
    for (const path of term.expr === null ? defaultPaths(version) : [term.source]) if (!paths.includes(path)) paths.push(path);
  }
  const select = paths.map((path) => {
    const column = exportColumn(path, version);
    if (!column) throw badRequest(`${path} is not in the reporting store, so not in a Parquet export: use format=csv`, { fields: `${path}: use format=csv` });
    return column;
  });
  const conditions = [`org_id = ${params.add('String', request.tenant.orgId)}`, `environment = ${params.add('String', request.tenant.environment)}`];
  if (request.type) conditions.push(`type = ${params.add('String', request.type)}`);
  if (query.where) conditions.push(`(${compiler.where(query.where)})`);
  const order = query.orderBy.length
    ? query.orderBy.map((term) => `${compiler.operand(term.expr, false).sql} ${term.direction.toUpperCase()} NULLS ${term.direction === 'asc' ? 'FIRST' : 'LAST'}`)
    : ['created_at ASC'];
  const where = conditions.join(' AND ');
  return {
    sql: `SELECT ${select.join(', ')}
FROM ${table} FINAL
WHERE ${where}
ORDER BY ${[...order, 'id ASC'].join(', ')}
LIMIT ${params.add('UInt64', limit)} OFFSET ${params.add('UInt64', query.offset)}
SETTINGS max_execution_time = 300, output_format_parquet_string_as_string = 1`,
    countSql: `SELECT count() AS n FROM ${table} FINAL WHERE ${where}`,
    params: params.values,
  };
}
