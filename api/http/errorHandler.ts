/**
 * The one place errors become responses (CONTRACT §2). 4xx carry their description and details;
 * anything unexpected is logged with its stack and answered as a bare 500.
 */
import type { Context, Next } from 'koa';
import { ApiError } from '../errors.ts';
import type { RequestState } from './state.ts';

export interface ErrorBody {
  object: 'error';
  error_type: string;
  error_description: string;
  details?: Record<string, unknown>;
}

export function errorBody(error: ApiError): ErrorBody {
  const body: ErrorBody = { object: 'error', error_type: error.errorType, error_description: error.message };
  if (error.details) body.details = error.details;
  return body;
}

/** Koa's own HTTP errors (e.g. from the router) mapped onto our error types. */
function fromForeignError(error: unknown): ApiError | null {
  const status = typeof error === 'object' && error !== null ? (error as { status?: unknown }).status : undefined;
  if (typeof status !== 'number' || status < 400 || status >= 500) return null;
  const types: Record<number, string> = { 400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 405: 'BadRequest', 413: 'PayloadTooLarge', 415: 'BadRequest' };
  return new ApiError(status === 405 ? 400 : status, types[status] ?? 'BadRequest', (error as Error).message || 'Bad request');
}

const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', '53300']);

/** Database errors a client can cause or a dependency outage: never a 500. */
function fromDatabaseError(error: unknown): ApiError | null {
  if (typeof error !== 'object' || error === null) return null;
  const code = (error as { code?: unknown }).code;
  const name = (error as { name?: unknown }).name;
  if ((typeof code === 'string' && UNAVAILABLE_CODES.has(code)) || name === 'KnexTimeoutError') {
    return new ApiError(503, 'ServiceUnavailable', 'The database is unavailable; retry shortly');
  }
  // Two requests locking the same rows in opposite orders: one is chosen to fail; it may retry.
  if (code === '40P01' || code === '40001') return new ApiError(409, 'Conflict', 'The request conflicted with a concurrent change; retry it');
  // Class 22 (data exception): a bound value out of range for its type, e.g. year 99999.
  if (typeof code === 'string' && code.startsWith('22')) return new ApiError(400, 'BadRequest', 'A value is out of range', { value: 'Out of range' });
  return null;
}

export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  return fromForeignError(error) ?? fromDatabaseError(error) ?? new ApiError(500, 'InternalServerError', 'Internal server error');
}

export async function errorHandler(ctx: Context & { state: RequestState }, next: Next): Promise<void> {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) throw new ApiError(404, 'NotFound', `No route for ${ctx.method} ${ctx.path}`);
  } catch (error) {
    const apiError = toApiError(error);
    // Unexpected errors are logged with their stack; a deliberate 503 (a dependency down) is logged
    // once by whoever watches that dependency, not once per request.
    if (!(error instanceof ApiError) && apiError.status >= 500) ctx.state.log?.error({ err: error }, 'request failed');
    ctx.status = apiError.status;
    ctx.set(apiError.headers);
    ctx.body = errorBody(apiError);
  }
}
