/**
 * Transaction aggregates (`fields` with aggregates, `group_by`) go to the reporting process over
 * internal HTTP (CONTRACT §6). The API has authenticated the key and fixed the tenant; it passes
 * them with its read position (a Postgres snapshot), so the answer includes every transaction committed before this
 * request started, or is a 503 after REPORTING_WAIT. The reporting process never sees a client's
 * credentials, and its errors reach the client only as our own error types.
 */
import type { Context } from 'koa';
import { rows, type Db } from '../db/connection.ts';
import type { Collection } from '../engine/family.ts';
import { isAggregateQuery } from '../engine/operations.ts';
import { ApiError, serviceUnavailable } from '../errors.ts';
import type { ListQuery } from '../query/ast.ts';
import type { RequestState } from './state.ts';

/** Body of POST /query on the reporting process. */
export interface ReportingQuery {
  tenant: { orgId: string; environment: string };
  version: string;
  /** the collection's fixed type, if any */
  type?: string;
  /** the request's query string, decoded pairs in order */
  params: Array<[string, string]>;
  /** the request's Postgres snapshot (`xmin:xmax:xip`): the answer must reflect every transaction committed before it */
  snapshot: string;
}

const SLACK_MS = 1000;

/** Whether the reporting process answers this list request. */
export function answeredByReporting(ctx: Context & { state: RequestState }, collection: Collection, query: ListQuery): boolean {
  return ctx.state.services.config.reportingUrl !== null && collection.family.name === 'transaction' && isAggregateQuery(query);
}

/**
 * The read-your-writes position: a snapshot taken now. Everything committed before the request
 * started is visible in it; the reporting mirror's position is a snapshot too, and answers once
 * its own covers this one.
 */
export async function currentSnapshot(db: Db): Promise<string> {
  const [row] = await rows<{ snapshot: string }>(db, 'select pg_current_snapshot()::text as snapshot');
  return row.snapshot;
}

export async function queryReporting(ctx: Context & { state: RequestState }, collection: Collection): Promise<Record<string, unknown>> {
  const { config, db } = ctx.state.services;
  const body: ReportingQuery = {
    tenant: { orgId: ctx.state.tenant!.orgId, environment: ctx.state.tenant!.environment },
    version: ctx.state.version,
    type: collection.fixedType,
    params: [...new URLSearchParams(ctx.querystring)],
    snapshot: await currentSnapshot(db),
  };
  const headers: Record<string, string> = { 'Content-Type': 'application/json', 'X-Request-Id': ctx.state.requestId };
  if (config.reportingSecret) headers.Authorization = `Bearer ${config.reportingSecret}`;
  let response: Response;
  let answer: unknown;
  try {
    response = await fetch(`${config.reportingUrl}/query`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(config.reportingWaitMs + SLACK_MS),
    });
    answer = await response.json();
  } catch (error) {
    ctx.state.log.warn({ err: (error as Error).message }, 'reporting process unreachable');
    throw serviceUnavailable('Reporting is unavailable; retry shortly');
  }
  if (response.ok && isObject(answer) && answer.object === 'list') return answer;
  throw reportingError(response.status, answer);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Client errors pass through as the reporting process stated them; anything else is ours to word. */
function reportingError(status: number, answer: unknown): ApiError {
  const error = isObject(answer) && answer.object === 'error' ? answer : null;
  if (error && status >= 400 && status < 500 && typeof error.error_type === 'string' && typeof error.error_description === 'string') {
    return new ApiError(status, error.error_type, error.error_description, isObject(error.details) ? error.details : undefined);
  }
  if (status === 503) return serviceUnavailable(typeof error?.error_description === 'string' ? error.error_description : 'Reporting is unavailable; retry shortly');
  return new ApiError(500, 'InternalServerError', 'Internal server error');
}
