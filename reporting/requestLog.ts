/**
 * The request log in the reporting store: the web processes ship their logged requests here in
 * batches (`POST /request_logs`), and `GET /request_logs` is answered from here (`POST
 * /request_logs/query`) — a list, or `fields` aggregates and `group_by` compiled by the same
 * compiler as transaction reports. Rows leave by the table's TTL (SETTLE_REQUEST_LOG_RETENTION).
 */
import type { Context } from 'koa';
import type { Version } from '../api/engine/family.ts';
import { isAggregateQuery } from '../api/engine/operations.ts';
import type { Json } from '../api/engine/view.ts';
import { ApiError, badRequest, serviceUnavailable } from '../api/errors.ts';
import { REQUEST_LOG_COLUMNS, REQUEST_LOG_SHIPPED, requestLogs, storedLogTime, type RequestLogRow } from '../api/families/request_logs/family.ts';
import { parseListQuery } from '../api/query/listQuery.ts';
import { formatTimestamp } from '../api/schema/values.ts';
import type { ListQuery } from '../api/query/ast.ts';
import { ClickHouseCompiler } from './compiler.ts';
import { compileReport, decodeRows } from './report.ts';
import type { ReportingStore } from './store.ts';

const SOURCE = { family: requestLogs, columns: REQUEST_LOG_COLUMNS, final: false };
const COLUMNS = [...REQUEST_LOG_COLUMNS.keys()];
/** The columns an ingest inserts, in the order web processes ship them. */
const INSERTED: readonly string[] = REQUEST_LOG_SHIPPED;
const CREATED_AT = INSERTED.indexOf('created_at');
/**
 * Rows and bytes one ingest of lines may carry (a web process sends at most half as many at once).
 * Each insert costs the store a part to write and merge: 50,000-row batches cost it 1.7–2.0 µs a
 * row, 10,000-row ones 2.9–3.8 (300,000 rows each way, merges included).
 */
export const INGEST_MAX_ROWS = 100_000;
export const INGEST_MAX_BYTES = 32 * 1024 * 1024;
/** The same for `{columns, rows}` JSON, as web processes of earlier releases ship it. */
export const LEGACY_MAX_ROWS = 10_000;
export const LEGACY_MAX_BYTES = 8 * 1024 * 1024;

function tableOf(store: ReportingStore): string {
  return `${store.database}.request_logs`;
}

const ready = new WeakMap<ReportingStore, Promise<void>>();

/**
 * Columns of a table made by an earlier release as LowCardinality become plain: a LowCardinality
 * column costs every insert its dictionary (a third of the store's CPU for a batch of request log
 * rows, measured), and at this table's size a plain column reads about as fast. ClickHouse rewrites
 * the old parts in the background.
 */
async function plainColumns(store: ReportingStore): Promise<void> {
  const columns = await store.select<{ name: string; type: string }>(
    `SELECT name, type FROM system.columns WHERE database = {database:String} AND table = 'request_logs' AND type LIKE 'LowCardinality(%'`, { database: store.database });
  if (columns.length === 0) return;
  const changes = columns.map(({ name, type }) => `MODIFY COLUMN ${name} ${type.replace(/^LowCardinality\((.*)\)$/, '$1')}`);
  await store.client.command({ query: `ALTER TABLE ${tableOf(store)} ${changes.join(', ')}` });
}

/**
 * Parts merge in bigger steps than ClickHouse's default (`merge_selector_base` 20, not 5): each
 * shipment is a part of its own, and with the default the background merges rewrote each row
 * several times over, which cost the store more CPU than the inserts (a 400k-row run of 10k-row
 * inserts: 1.4–1.6 CPU s with it against 2.1–2.4 s without, and no more after). A ClickHouse
 * server too old to know the setting keeps its default.
 */
async function fewerMerges(store: ReportingStore): Promise<void> {
  try {
    await store.client.command({ query: `ALTER TABLE ${tableOf(store)} MODIFY SETTING merge_selector_base = 20` });
  } catch (error) {
    if ((error as { type?: unknown }).type !== 'UNKNOWN_SETTING') throw error;
  }
}

/** Creates the table once per store, keeps its TTL at the configured retention and its columns plain. */
function ensureTable(store: ReportingStore, retentionMs: number): Promise<void> {
  let done = ready.get(store);
  if (!done) {
    const ttl = `toDateTime(created_at) + INTERVAL ${Math.max(1, Math.floor(retentionMs / 1000))} SECOND`;
    done = (async () => {
      await store.client.command({ query: `CREATE TABLE IF NOT EXISTS ${tableOf(store)} (
  org_id String,
  environment String,
  id String,
  method String,
  route String,
  path String,
  status UInt16,
  duration_ms UInt32,
  key_prefix Nullable(String),
  idempotency_key Nullable(String),
  api_version Nullable(String),
  error_type Nullable(String),
  ip String,
  user_agent String,
  created_at DateTime64(3, 'UTC')
) ENGINE = MergeTree ORDER BY (org_id, environment, created_at, id) TTL ${ttl}` });
      await store.client.command({ query: `ALTER TABLE ${tableOf(store)} MODIFY TTL ${ttl}` });
      await plainColumns(store);
      await fewerMerges(store);
    })();
    done.catch(() => ready.delete(store));
    ready.set(store, done);
  }
  return done;
}

function validRow(row: unknown): row is RequestLogRow {
  const r = row as Partial<RequestLogRow> | null;
  return !!r && typeof r.id === 'string' && typeof r.org_id === 'string' && typeof r.method === 'string'
    && Number.isInteger(r.status) && typeof r.created_at === 'string' && !Number.isNaN(Date.parse(r.created_at));
}

const TEXT = (v: unknown) => typeof v === 'string';
const TEXT_OR_NULL = (v: unknown) => v === null || typeof v === 'string';
/** Each shipped column's check, in INSERTED's order. */
const CHECKS: Record<string, (v: unknown) => boolean> = {
  status: Number.isInteger, duration_ms: (v) => Number.isInteger(v) && (v as number) >= 0,
  created_at: (v) => Number.isFinite(v) && (v as number) >= 0 && (v as number) < 8.64e15,
  key_prefix: TEXT_OR_NULL, idempotency_key: TEXT_OR_NULL, api_version: TEXT_OR_NULL, error_type: TEXT_OR_NULL,
};
const CHECK_IN_ORDER = INSERTED.map((column) => CHECKS[column] ?? TEXT);

function validTuple(row: unknown): row is unknown[] {
  return Array.isArray(row) && row.length === INSERTED.length && CHECK_IN_ORDER.every((check, i) => check(row[i]));
}

/**
 * A JSON batch's rows as JSONCompactEachRow lines (values in INSERTED's order), or null when
 * malformed: `{columns, rows}` with rows of values, the time in epoch milliseconds, or `{rows}` of
 * objects, as web processes of earlier releases shipped them.
 */
function batchLines(body: unknown): string[] | null {
  const { columns, rows } = (body ?? {}) as { columns?: unknown; rows?: unknown };
  if (!Array.isArray(rows) || rows.length > LEGACY_MAX_ROWS) return null;
  if (columns !== undefined) {
    if (!Array.isArray(columns) || columns.length !== INSERTED.length || columns.some((c, i) => c !== INSERTED[i])) return null;
    if (!rows.every(validTuple)) return null;
    return rows.map((row: unknown[]) => {
      row[CREATED_AT] = storedLogTime(row[CREATED_AT] as number);
      return JSON.stringify(row);
    });
  }
  if (!rows.every(validRow)) return null;
  return rows.map((r) => JSON.stringify(INSERTED.map((c) => (c === 'created_at' ? r.created_at.replace('T', ' ').replace('Z', '') : (r as unknown as Record<string, unknown>)[c] ?? null))));
}

/** `POST /request_logs` {columns, rows} (web processes of earlier releases): stored as one insert. */
export async function ingestRequestLogs(ctx: Context, store: ReportingStore, body: unknown, retentionMs: number): Promise<void> {
  const lines = batchLines(body);
  if (!lines) throw badRequest('Malformed request log batch');
  await ensureTable(store, retentionMs);
  if (lines.length) await insertLines(store, INSERTED, `${lines.join('\n')}\n`);
  ctx.body = { stored: lines.length };
}

/**
 * `POST /request_logs` as `application/x-ndjson`, as web processes ship it: a line of column names,
 * then a row a line (JSONCompactEachRow). The rows go to the store as they came, unparsed here:
 * ClickHouse parses them once, and refuses a batch with any malformed row whole (one insert, one
 * part), which answers 400. Parsing the batch here and writing it again cost the reporting
 * process about as much CPU as the store's own parse.
 */
export async function ingestRequestLogLines(ctx: Context, store: ReportingStore, body: Buffer, retentionMs: number): Promise<void> {
  const headEnd = body.indexOf(NEWLINE);
  const columns = headEnd < 0 ? null : namesOf(body.toString('utf8', 0, headEnd));
  if (!columns) throw badRequest('Malformed request log batch: its first line must name its columns', { columns: `a JSON array of ${INSERTED.join(', ')}` });
  // A row a line; the last may lack its newline. The rows stay bytes: decoding a 10,000-row batch
  // to a string and writing it out again was the reporting process's main cost per logged request.
  let rows = body.length > headEnd + 1 && body[body.length - 1] !== NEWLINE ? 1 : 0;
  for (let at = body.indexOf(NEWLINE, headEnd + 1); at >= 0; at = body.indexOf(NEWLINE, at + 1)) rows++;
  if (rows > INGEST_MAX_ROWS) throw new ApiError(413, 'PayloadTooLarge', `A request log batch holds at most ${INGEST_MAX_ROWS} rows`);
  await ensureTable(store, retentionMs);
  if (rows > 0) {
    try {
      await insertLines(store, columns, body.subarray(headEnd + 1));
    } catch (error) {
      if (malformedInput(error)) throw badRequest('Malformed request log batch: a row does not match its columns; nothing of it was stored');
      throw error;
    }
  }
  ctx.body = { stored: rows };
}

const NEWLINE = 0x0a;

/** A batch's column names: known, each once, `id` among them; null otherwise. */
function namesOf(line: string): string[] | null {
  let names: unknown;
  try {
    names = JSON.parse(line);
  } catch {
    return null;
  }
  if (!Array.isArray(names) || names.length === 0 || !names.includes('id')) return null;
  if (names.some((name) => typeof name !== 'string' || !INSERTED.includes(name)) || new Set(names).size !== names.length) return null;
  return names as string[];
}

/** Compact rows (values in column order, no keys) parse fastest. */
async function insertLines(store: ReportingStore, columns: readonly string[], lines: string | Buffer): Promise<void> {
  await store.insert((source) => `INSERT INTO ${tableOf(store)} (${columns.join(', ')})${source} FORMAT JSONCompactEachRow`, lines);
}

/** A store error that says the input could not be read as the columns' values (the rows' fault, not the store's). */
function malformedInput(error: unknown): boolean {
  const type = (error as { type?: unknown } | null)?.type;
  return typeof type === 'string' && (type.startsWith('CANNOT_PARSE') || MALFORMED_INPUT.has(type));
}
const MALFORMED_INPUT = new Set(['INCORRECT_DATA', 'TYPE_MISMATCH', 'CANNOT_READ_ARRAY_FROM_TEXT', 'CANNOT_CONVERT_TYPE', 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE',
  'CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN', 'INCORRECT_NUMBER_OF_COLUMNS', 'CANNOT_READ_ALL_DATA', 'ATTEMPT_TO_READ_AFTER_EOF']);

interface LogQuery {
  tenant: { orgId: string; environment: 'test' | 'live' };
  version: Version;
  params: Array<[string, string]>;
}

function queryBody(raw: unknown): LogQuery {
  const body = raw as Partial<LogQuery> | null;
  const valid = body && typeof body.tenant?.orgId === 'string' && (body.tenant.environment === 'test' || body.tenant.environment === 'live')
    && (body.version === 'v1' || body.version === 'v2') && Array.isArray(body.params)
    && body.params.every((p) => Array.isArray(p) && p.length === 2 && p.every((s) => typeof s === 'string'));
  if (!valid) throw badRequest('Malformed request log query');
  return body as LogQuery;
}

/** `POST /request_logs/query`: the tenant's rows (newest first unless ordered), or aggregates. */
export async function queryRequestLogs(ctx: Context, store: ReportingStore | null, raw: unknown, retentionMs: number, notReady: string): Promise<void> {
  const body = queryBody(raw);
  const query = parseListQuery(body.params);
  if (!store) throw serviceUnavailable(notReady);
  await ensureTable(store, retentionMs);
  const request = { tenant: body.tenant, version: body.version, query };
  if (isAggregateQuery(query)) {
    const compiled = compileReport(request, tableOf(store), SOURCE);
    ctx.body = { object: 'list', values: decodeRows(compiled, await store.select(compiled.sql, compiled.params)) };
    return;
  }
  ctx.body = { object: 'list', values: await listRows(store, body.version, query, body.tenant) };
}

async function listRows(store: ReportingStore, version: Version, query: ListQuery, tenant: LogQuery['tenant']): Promise<Json[]> {
  const compiler = new ClickHouseCompiler(requestLogs, version, undefined, REQUEST_LOG_COLUMNS);
  const params = compiler.params;
  const conditions = [`org_id = ${params.add('String', tenant.orgId)}`, `environment = ${params.add('String', tenant.environment)}`];
  if (query.where) conditions.push(`(${compiler.where(query.where)})`);
  const order = query.orderBy.map((term) => `${compiler.operand(term.expr, false).sql} ${term.direction.toUpperCase()}`);
  if (order.length === 0) order.push('created_at DESC', 'id DESC');
  const rows = await store.select<Record<string, unknown>>(
    `SELECT ${COLUMNS.map((c) => (c === 'created_at' ? `toString(created_at) AS created_at` : c)).join(', ')}
FROM ${tableOf(store)}
WHERE ${conditions.join(' AND ')}
ORDER BY ${order.join(', ')}
LIMIT ${params.add('UInt64', query.limit)} OFFSET ${params.add('UInt64', query.offset)}`,
    params.values,
  );
  return rows.map((row) => ({
    object: 'request_log',
    ...row,
    status: Number(row.status),
    duration_ms: Number(row.duration_ms),
    // Stored with milliseconds (the order within a second); shown as every timestamp is.
    created_at: formatTimestamp(`${String(row.created_at).replace(' ', 'T')}Z`),
  }));
}

/** The routes under /request_logs of the reporting server (reporting/server.ts). */
export async function answerRequestLogs(ctx: Context, engine: { store: () => ReportingStore | null; notReady: () => string }, body: unknown, retentionMs: number): Promise<void> {
  if (ctx.path === '/request_logs/query') return queryRequestLogs(ctx, engine.store(), body, retentionMs, engine.notReady());
  if (ctx.path !== '/request_logs') return;
  const store = engine.store();
  if (!store) throw serviceUnavailable(engine.notReady());
  return ingestRequestLogs(ctx, store, body, retentionMs);
}

/** `POST /request_logs` as lines (`ingestRequestLogLines`). */
export async function answerRequestLogLines(ctx: Context, engine: { store: () => ReportingStore | null; notReady: () => string }, body: Buffer, retentionMs: number): Promise<void> {
  const store = engine.store();
  if (!store) throw serviceUnavailable(engine.notReady());
  return ingestRequestLogLines(ctx, store, body, retentionMs);
}
