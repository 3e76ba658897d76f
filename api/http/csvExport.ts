/**
 * CSV answers of lists and aggregates (`format=csv` or `Accept: text/csv`): a header of the fields
 * as requested (nested fields as `a.b`, an object named whole as its leaves), RFC 4180 quoting, UTF-8, money as the JSON shows it. A
 * list is streamed from a cursor a batch at a time, so an export of a million rows holds one batch;
 * without `limit` it holds every matching row up to SETTLE_EXPORT_MAX_ROWS, beyond which it is a
 * 400 naming the limit (counted before the first byte is sent).
 */
import { PassThrough } from 'node:stream';
import type { Context } from 'koa';
import * as objects from '../db/objects.ts';
import type { Family, Version } from '../engine/family.ts';
import * as operations from '../engine/operations.ts';
import type { OperationContext } from '../engine/operations.ts';
import { fieldsOf } from '../schema/fields.ts';
import { fieldReader, getPath, type Json } from '../engine/view.ts';
import type { StoredObject } from '../engine/family.ts';
import { badRequest } from '../errors.ts';
import type { ListQuery } from '../query/ast.ts';
import type { RequestState } from './state.ts';

const BATCH_ROWS = 2000;

/** One RFC 4180 line: fields with a comma, quote or line break are quoted, quotes doubled. */
export function csvLine(cells: unknown[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}

function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The columns of `*`: every default field of the version, nested ones as `a.b`, in declaration order. */
function defaultColumns(family: Family, version: Version): string[] {
  const columns = ['id', 'object'];
  for (const [path, field] of fieldsOf(family, version)) {
    if (field.writeOnly || field.nonDefault || columns.includes(path)) continue;
    columns.push(path);
  }
  return columns;
}

/** A named field's columns: the field itself, or for an object holding fields (`contact_details`) its leaves. */
function namedColumns(family: Family, version: Version, path: string): string[] {
  const fields = fieldsOf(family, version);
  if (fields.has(path)) return [path];
  const leaves = [...fields].filter(([leaf, field]) => leaf.startsWith(`${path}.`) && !field.writeOnly).map(([leaf]) => leaf);
  return leaves.length ? leaves : [path];
}

/** The header of a list: the named fields (objects as their leaves), `*` standing for the default ones where it was written. */
export function listColumns(family: Family, version: Version, query: ListQuery): string[] {
  if (!query.fields) return defaultColumns(family, version);
  const columns: string[] = [];
  for (const term of query.fields) {
    for (const column of term.expr === null ? defaultColumns(family, version) : namedColumns(family, version, term.source)) {
      if (!columns.includes(column)) columns.push(column);
    }
  }
  return columns;
}

function cellsOf(row: Json, columns: string[]): unknown[] {
  return columns.map((column) => (column in row ? row[column] : getPath(row, column)));
}

function startCsv(ctx: Context, name: string): PassThrough {
  const stream = new PassThrough();
  ctx.status = 200;
  ctx.type = 'text/csv; charset=utf-8';
  ctx.set('Content-Disposition', `attachment; filename="${name}.csv"`);
  ctx.body = stream;
  return stream;
}

/** The export ceiling: a limit above it, or (without a limit) more matching rows, is a 400 naming it. */
function ceiling(query: ListQuery, maxRows: number): number {
  if (query.limitGiven && query.limit > maxRows) {
    throw badRequest(`An export holds at most ${maxRows} rows (SETTLE_EXPORT_MAX_ROWS)`, { limit: `At most ${maxRows}` });
  }
  return query.limitGiven ? query.limit : maxRows;
}

/**
 * Turns a batch of stored rows into CSV lines: column by column straight from the stored values
 * when every column is one declared field (after the family's loading step, as `shape` does),
 * else through the full rendering.
 */
function linesOf(op: OperationContext, query: ListQuery, columns: string[]): (rows: StoredObject[]) => Promise<string> {
  const { family } = op.collection;
  const readers = columns.map((column) => fieldReader(family, op.version, column));
  const include = new Set(columns);
  if (readers.some((reader) => reader === null)) {
    return async (rows) => (await operations.shape(op, rows, query.fields)).map((row) => csvLine(cellsOf(row, columns))).join('');
  }
  const read = readers as Array<(row: StoredObject) => unknown>;
  return async (rows) => {
    await family.rules?.load?.(op, rows, include);
    let text = '';
    for (const row of rows) text += csvLine(read.map((reader) => reader(row)));
    return text;
  };
}

/** Resolves when the client has taken what was written, or has gone away. */
function drained(stream: PassThrough): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}

/** Streams a list as CSV; resolves once the answer has started (the rows follow). */
export async function listAsCsv(ctx: Context & { state: RequestState }, op: OperationContext, query: ListQuery): Promise<void> {
  const maxRows = ctx.state.services.config.exportMaxRows;
  const limit = ceiling(query, maxRows);
  const { family } = op.collection;
  const columns = listColumns(family, op.version, query);
  const spec = operations.listSpec(op, query, limit);
  if (!query.limitGiven && (await objects.countObjects(op.tx, family.table, op.tenant, spec, maxRows + 1)) > maxRows) {
    throw badRequest(`More than ${maxRows} rows match: narrow the query or page with limit and offset (SETTLE_EXPORT_MAX_ROWS)`, { limit: `At most ${maxRows} rows per export` });
  }
  // Unknown fields are refused before the answer starts.
  await operations.shape(op, [], query.fields);
  const stream = startCsv(ctx, ctx.params?.collection ?? family.table);
  stream.write(csvLine(columns));
  let closed = false;
  stream.on('close', () => (closed = true));
  const log = ctx.state.log;
  const lines = linesOf(op, query, columns);
  objects.streamObjects(op.tx, family.table, op.tenant, spec, BATCH_ROWS, async (rows) => {
    const text = await lines(rows);
    if (closed) return false;
    if (!stream.write(text)) await drained(stream);
    return !closed;
  }).then(() => stream.end(), (error: unknown) => {
    log?.error({ err: error instanceof Error ? error.message : String(error) }, 'CSV export stopped');
    stream.destroy(error instanceof Error ? error : new Error(String(error)));
  });
}

/** A list answered whole by another process (the request log) as CSV: the columns `listColumns` names. */
export function rowsAsCsv(ctx: Context & { state: RequestState }, family: Family, query: ListQuery, answer: Record<string, unknown>): void {
  const values = (Array.isArray(answer.values) ? answer.values : []) as Json[];
  const columns = listColumns(family, ctx.state.version, query);
  const stream = startCsv(ctx, ctx.params?.collection ?? family.table);
  stream.end([csvLine(columns), ...values.map((row) => csvLine(cellsOf(row, columns)))].join(''));
}

/** An aggregate (or computed-field) answer as CSV: its rows are groups, made at once. */
export function aggregateAsCsv(ctx: Context & { state: RequestState }, query: ListQuery, answer: Record<string, unknown>): void {
  const values = (Array.isArray(answer.values) ? answer.values : []) as Json[];
  const maxRows = ctx.state.services.config.exportMaxRows;
  ceiling(query, maxRows);
  if (values.length > maxRows) throw badRequest(`More than ${maxRows} rows match: narrow the query or page with limit and offset (SETTLE_EXPORT_MAX_ROWS)`, { limit: `At most ${maxRows} rows per export` });
  const columns = (query.fields ?? []).map((term) => term.source);
  for (const term of query.groupBy) if (!columns.includes(term.source)) columns.push(term.source);
  const stream = startCsv(ctx, ctx.params?.collection ?? 'report');
  stream.end([csvLine(columns), ...values.map((row) => csvLine(cellsOf(row, columns)))].join(''));
}
