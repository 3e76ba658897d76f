/**
 * Transaction aggregates (`fields` with aggregates, `group_by`) go to the reporting process over
 * internal HTTP (CONTRACT §6). The API has authenticated the key and fixed the tenant; it passes
 * them with its read position (a Postgres snapshot), so the answer includes every transaction committed before this
 * request started, or is a 503 after REPORTING_WAIT. The reporting process never sees a client's
 * credentials, and its errors reach the client only as our own error types.
 *
 * Reporting being down, slow, failing or misconfigured is a 503 ServiceUnavailable whose
 * description says which, never a 500; the web process logs when such an outage starts and when
 * it ends, not once per request.
 */
import type { Context } from 'koa';
import type { Logger } from 'pino';
import { currentSnapshot } from '../db/snapshot.ts';
import type { Collection } from '../engine/family.ts';
import { isAggregateQuery } from '../engine/operations.ts';
import { ApiError, serviceUnavailable } from '../errors.ts';
import type { ListQuery } from '../query/ast.ts';
import type { ReportingQuery } from '../reportingProtocol.ts';
import type { AppServices, RequestState } from './state.ts';

const SLACK_MS = 1000;

/** Whether reporting is failing, per web app: its log says so when that changes, not per request. */
class ReportingOutage {
  #since = 0;
  #failures = 0;

  failed(log: Logger, reason: string, err?: string): void {
    this.#failures += 1;
    if (this.#since) return;
    this.#since = Date.now();
    log.warn({ reason, err }, 'reporting unavailable: aggregate queries answer 503 until it recovers');
  }

  answered(log: Logger): void {
    if (!this.#since) return;
    log.info({ failures: this.#failures, down_ms: Date.now() - this.#since }, 'reporting available again');
    this.#since = 0;
    this.#failures = 0;
  }
}

const outages = new WeakMap<AppServices, ReportingOutage>();

function outageOf(services: AppServices): ReportingOutage {
  let outage = outages.get(services);
  if (!outage) outages.set(services, (outage = new ReportingOutage()));
  return outage;
}

/** Whether the reporting process answers this list request. */
export function answeredByReporting(ctx: Context & { state: RequestState }, collection: Collection, query: ListQuery): boolean {
  return ctx.state.services.config.reportingUrl !== null && collection.family.name === 'transaction' && isAggregateQuery(query);
}

/** Asks the reporting process; resolves with its successful answer, or throws the API's error. */
async function askReporting(ctx: Context & { state: RequestState }, collection: Collection): Promise<Response> {
  const { config, db } = ctx.state.services;
  const body: ReportingQuery = {
    tenant: { orgId: ctx.state.tenant!.orgId, environment: ctx.state.tenant!.environment },
    version: ctx.state.version,
    type: collection.fixedType,
    params: [...new URLSearchParams(ctx.querystring)],
    // Read-your-writes: the reporting mirror's position is a snapshot too, and it answers once
    // its own covers this one, so everything committed before this request started is counted.
    snapshot: await currentSnapshot(db),
  };
  const headers: Record<string, string> = { 'Content-Type': 'application/json', 'X-Request-Id': ctx.state.requestId };
  if (config.reportingSecret) headers.Authorization = `Bearer ${config.reportingSecret}`;
  const outage = outageOf(ctx.state.services);
  const waitMs = config.reportingWaitMs + SLACK_MS;
  let response: Response;
  try {
    response = await fetch(`${config.reportingUrl}/query`, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(waitMs) });
  } catch (error) {
    const timedOut = (error as Error).name === 'TimeoutError';
    outage.failed(ctx.state.log, timedOut ? 'timeout' : 'unreachable', errorText(error));
    throw serviceUnavailable(timedOut
      ? `Reporting is unavailable: the reporting process did not answer within ${waitMs} ms; retry shortly`
      : 'Reporting is unavailable: the reporting process cannot be reached; retry shortly');
  }
  if (response.ok) {
    outage.answered(ctx.state.log);
    return response;
  }
  let answer: unknown;
  try {
    answer = await response.json();
  } catch {
    answer = null;
  }
  const error = reportingError(response.status, answer);
  if (error.status === 503) outage.failed(ctx.state.log, `reporting answered ${response.status}`, error.message);
  else outage.answered(ctx.state.log);
  throw error;
}

export async function queryReporting(ctx: Context & { state: RequestState }, collection: Collection): Promise<Record<string, unknown>> {
  const response = await askReporting(ctx, collection);
  const timing = response.headers.get('server-timing');
  if (timing) ctx.set('Server-Timing', timing);
  let answer: unknown;
  try {
    answer = await response.json();
  } catch {
    answer = null;
  }
  if (isObject(answer) && answer.object === 'list') return answer;
  throw reportingError(502, answer);
}

/** A Parquet export of transactions, written by the reporting store, passed on as it comes. */
export async function exportFromReporting(ctx: Context & { state: RequestState }, collection: Collection): Promise<void> {
  const response = await askReporting(ctx, collection);
  ctx.status = 200;
  ctx.type = 'application/vnd.apache.parquet';
  ctx.set('Content-Disposition', `attachment; filename="${ctx.params.collection ?? 'transactions'}.parquet"`);
  ctx.body = Buffer.from(await response.arrayBuffer());
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function errorText(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  return String(cause?.code ?? cause?.message ?? (error as Error).message);
}

/**
 * The client's own mistakes (400, 404, 413) pass through as the reporting process stated them.
 * Everything else is reporting's trouble, not the client's: a 503 that says which.
 */
function reportingError(status: number, answer: unknown): ApiError {
  const error = isObject(answer) && answer.object === 'error' ? answer : null;
  if (status === 401 || status === 403) {
    return serviceUnavailable('Reporting is unavailable: the reporting process refused this server\'s credentials (a configuration error)');
  }
  if (error && status >= 400 && status < 500 && typeof error.error_type === 'string' && typeof error.error_description === 'string') {
    return new ApiError(status, error.error_type, error.error_description, isObject(error.details) ? error.details : undefined);
  }
  if (status === 503 && typeof error?.error_description === 'string') return serviceUnavailable(error.error_description);
  return serviceUnavailable(`Reporting is unavailable: the reporting process failed to answer (HTTP ${status}); retry shortly`);
}
