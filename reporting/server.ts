/**
 * The reporting process's internal HTTP interface. Only the web process calls it (the client's
 * key was checked there; the tenant arrives in the body), so it binds to loopback by default, and
 * every request must carry REPORTING_SECRET as a bearer token, /healthz included: a local user can
 * reach loopback too.
 *
 *   POST /query    {tenant, version, type?, params, snapshot} → {object: 'list', values, reporting_position}
 *                  with Server-Timing: mirror_wait (for the snapshot to be covered) and clickhouse (the query,
 *                  described by the table it read: the rollup or the mirror)
 *   POST /rebuild  → NDJSON progress lines, then {done: true, rows}
 *   GET  /healthz  → position, lag and role; 503 when this process cannot answer queries
 *
 * A failure of ClickHouse (or anything else unexpected) answers 503 with its reason, never 500, and
 * is logged when it starts and when it ends, not per request.
 */
import Koa, { type Context, type Next } from 'koa';
import { PassThrough } from 'node:stream';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { Version } from '../api/engine/family.ts';
import { ApiError, badRequest, errorResponse, serviceUnavailable, unauthorized } from '../api/errors.ts';
import { parseListQuery } from '../api/query/listQuery.ts';
import type { ListQuery } from '../api/query/ast.ts';
import { compileRowExport } from './rowExport.ts';
import { formatSnapshot, parseSnapshot, type Snapshot } from './feed.ts';
import type { ReportingQuery } from '../api/reportingProtocol.ts';
import { FailureLog } from './failures.ts';
import { compileReport, decodeRows } from './report.ts';
import { selectReport } from './repository.ts';
import type { ReportingStore } from './store.ts';
import type { RebuildProgress } from './mirror.ts';
import { metricsText } from '../api/metrics.ts';
import { answerRequestLogLines, answerRequestLogs, INGEST_MAX_BYTES, LEGACY_MAX_BYTES } from './requestLog.ts';

const BODY_LIMIT = 1024 * 1024;

export interface Health {
  healthy: boolean;
  body: Record<string, unknown>;
}

/** What the HTTP layer needs from the process: its store, position and mirror, whichever role it has. */
export interface ReportingEngine {
  store: () => ReportingStore | null;
  /** why `store()` is null, for the 503 */
  notReady: () => string;
  /** resolves with the position once the mirror covers `target`, or null after `timeoutMs` */
  reach: (target: Snapshot, timeoutMs: number) => Promise<Snapshot | null>;
  rebuild: ((progress: (p: RebuildProgress) => void) => Promise<RebuildProgress>) | null;
  health: () => Promise<Health>;
}

export interface ServerOptions {
  secret: string;
  waitMs: number;
  log: Logger;
  /** SETTLE_REQUEST_LOG_RETENTION: how long request log rows are kept (the table's TTL) */
  requestLogRetentionMs?: number;
  /** SETTLE_EXPORT_MAX_ROWS: the most rows a Parquet export holds */
  exportMaxRows?: number;
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_SOCKET']);

/** Whether an error means ClickHouse (or Postgres) could not be reached at all, rather than answered with an error. */
export function isUnreachable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : '';
  return (typeof code === 'string' && UNREACHABLE.has(code)) || /timeout|socket hang up|connect/i.test(message);
}

/** An unexpected failure as the caller sees it: a 503 that says which kind of trouble, never its text. */
function unavailable(error: unknown): ApiError {
  return isUnreachable(error)
    ? serviceUnavailable('Reporting is unavailable: its data store cannot be reached; retry shortly')
    : serviceUnavailable('Reporting is unavailable: its data store failed to answer; retry shortly');
}

export function createReportingApp(engine: ReportingEngine, options: ServerOptions): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  const failures = new FailureLog(options.log, 'reporting queries');
  app.use(async (ctx: Context, next: Next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new ApiError(404, 'NotFound', `No route for ${ctx.method} ${ctx.path}`);
      if (ctx.path === '/query' && ctx.status === 200) failures.succeeded();
    } catch (error) {
      // Only our own errors carry their words out; a ClickHouse message stays in the log.
      if (!(error instanceof ApiError)) failures.failed(error, { req: ctx.get('X-Request-Id') || undefined });
      const response = errorResponse(error instanceof ApiError ? error : unavailable(error));
      ctx.status = response.status;
      ctx.set(response.headers);
      ctx.body = response.body;
    }
  });
  app.use(async (ctx: Context, next: Next) => {
    authorize(ctx, options.secret);
    if (ctx.method === 'GET' && ctx.path === '/healthz') {
      const health = await engine.health();
      ctx.status = health.healthy ? 200 : 503;
      ctx.body = health.body;
      return;
    }
    if (ctx.method === 'GET' && ctx.path === '/metrics') {
      const { contentType, body } = await metricsText();
      ctx.type = contentType;
      ctx.body = body;
      return;
    }
    if (ctx.method === 'POST' && ctx.path === '/query') return answerQuery(ctx, engine, options);
    if (ctx.method === 'POST' && ctx.path === '/rebuild') return streamRebuild(ctx, engine);
    if (ctx.method === 'POST' && ctx.path === '/request_logs' && ctx.is('application/x-ndjson')) {
      return answerRequestLogLines(ctx, engine, await readBytes(ctx, INGEST_MAX_BYTES), options.requestLogRetentionMs ?? 30 * 86_400_000);
    }
    if (ctx.method === 'POST' && ctx.path.startsWith('/request_logs')) return answerRequestLogs(ctx, engine, await readJson(ctx, ctx.path === '/request_logs' ? LEGACY_MAX_BYTES : BODY_LIMIT), options.requestLogRetentionMs ?? 30 * 86_400_000);
    return next();
  });
  return app;
}

/** Digests of equal length, compared in constant time: neither the secret nor its length leaks through timing. */
function authorize(ctx: Context, secret: string): void {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  if (!timingSafeEqual(digest(ctx.get('Authorization')), digest(`Bearer ${secret}`))) throw unauthorized('Missing or invalid reporting secret');
}

async function readBytes(ctx: Context, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new ApiError(413, 'PayloadTooLarge', 'Request body exceeds the size limit');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

async function readJson(ctx: Context, limit = BODY_LIMIT): Promise<unknown> {
  const bytes = await readBytes(ctx, limit);
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    throw badRequest('Malformed JSON');
  }
}

function queryBody(raw: unknown): ReportingQuery {
  const body = raw as Partial<ReportingQuery> | null;
  const valid = body && typeof body === 'object'
    && typeof body.tenant?.orgId === 'string' && (body.tenant.environment === 'test' || body.tenant.environment === 'live')
    && (body.version === 'v1' || body.version === 'v2')
    && (body.type === undefined || typeof body.type === 'string')
    && Array.isArray(body.params) && body.params.every((p) => Array.isArray(p) && p.length === 2 && p.every((s) => typeof s === 'string'))
    && typeof body.snapshot === 'string' && parseSnapshot(body.snapshot) !== null;
  if (!valid) throw badRequest('Malformed reporting query');
  return body as ReportingQuery;
}

async function answerQuery(ctx: Context, engine: ReportingEngine, options: ServerOptions): Promise<void> {
  const body = queryBody(await readJson(ctx));
  const store = engine.store();
  if (!store) throw serviceUnavailable(engine.notReady());
  const query = parseListQuery(body.params);
  if (query.format === 'parquet') return answerParquet(ctx, engine, options, store, body, query);
  const request = {
    tenant: { orgId: body.tenant.orgId, environment: body.tenant.environment as 'test' | 'live' },
    version: body.version as Version,
    type: body.type,
    query,
  };
  // Compile first: a bad query is a 400 at once, not after waiting for the mirror.
  let compiled = compileReport(request, store.table);
  const waitStarted = performance.now();
  const position = await engine.reach(parseSnapshot(body.snapshot)!, options.waitMs);
  if (position === null) throw serviceUnavailable('Reporting has not caught up with the latest changes; retry shortly');
  // The rollup's days changed since their last recompute, as they stand now, are read from the table.
  if (compiled.rollup) compiled = compileReport(request, store.table, undefined, store.changedDays(request.tenant));
  const queryStarted = performance.now();
  const rows = await selectReport(store, compiled);
  const done = performance.now();
  // Where a reporting answer's time went: waiting for the mirror to cover the request's snapshot, then ClickHouse.
  // and which table answered: the rollup (its day or month rows), or the mirror's rows.
  const answered = compiled.grain === 'month' ? 'rollup months' : compiled.rollup ? 'rollup' : 'mirror';
  ctx.set('Server-Timing', `mirror_wait;dur=${(queryStarted - waitStarted).toFixed(1)}, clickhouse;dur=${(done - queryStarted).toFixed(1)};desc="${answered}"`);
  ctx.body = { object: 'list', values: decodeRows(compiled, rows), reporting_position: formatSnapshot(position) };
}

/** The matching transactions as a Parquet file, after the mirror covers the request's snapshot. */
async function answerParquet(ctx: Context, engine: ReportingEngine, options: ServerOptions, store: ReportingStore, body: ReportingQuery, query: ListQuery): Promise<void> {
  const maxRows = options.exportMaxRows ?? 1_000_000;
  if (query.limitGiven && query.limit > maxRows) throw badRequest(`An export holds at most ${maxRows} rows (SETTLE_EXPORT_MAX_ROWS)`, { limit: `At most ${maxRows}` });
  const compiled = compileRowExport({
    tenant: { orgId: body.tenant.orgId, environment: body.tenant.environment as 'test' | 'live' },
    version: body.version as Version,
    type: body.type,
    query,
  }, store.table, query.limitGiven ? query.limit : maxRows);
  const position = await engine.reach(parseSnapshot(body.snapshot)!, options.waitMs);
  if (position === null) throw serviceUnavailable('Reporting has not caught up with the latest changes; retry shortly');
  if (!query.limitGiven) {
    const [counted] = await store.select<{ n: string | number }>(compiled.countSql, compiled.params);
    if (Number(counted?.n ?? 0) > maxRows) throw badRequest(`More than ${maxRows} rows match: narrow the query or page with limit and offset (SETTLE_EXPORT_MAX_ROWS)`, { limit: `At most ${maxRows} rows per export` });
  }
  const file = await store.exportBytes(`${compiled.sql}\nFORMAT Parquet`, compiled.params);
  ctx.set('X-Reporting-Position', formatSnapshot(position));
  ctx.type = 'application/vnd.apache.parquet';
  ctx.body = file;
}

function streamRebuild(ctx: Context, engine: ReportingEngine): void {
  const rebuild = engine.rebuild;
  if (!rebuild) throw new ApiError(409, 'Conflict', 'This reporting process is not the mirror leader');
  const out = new PassThrough();
  ctx.type = 'application/x-ndjson';
  ctx.body = out;
  let last = 0;
  rebuild((progress) => {
    const now = Date.now();
    if (now - last < 200 && progress.done < progress.total) return;
    last = now;
    out.write(`${JSON.stringify(progress)}\n`);
  }).then(
    (final) => out.end(`${JSON.stringify({ ...final, finished: true })}\n`),
    (error: unknown) => out.end(`${JSON.stringify({ error: error instanceof ApiError ? error.message : 'rebuild failed; see the reporting log' })}\n`),
  );
}
