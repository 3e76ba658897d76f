/**
 * The one error family of the API. Domain code throws these; `errorResponse` below is the only
 * place that turns an error into a response (status, headers, body), for every caller: the web
 * process's error middleware, stored idempotent responses and the reporting process.
 */
export type ErrorDetails = Record<string, unknown>;

export class ApiError extends Error {
  readonly status: number;
  readonly errorType: string;
  readonly details: ErrorDetails | undefined;
  readonly headers: Record<string, string>;

  constructor(status: number, errorType: string, description: string, details?: ErrorDetails, headers: Record<string, string> = {}) {
    super(description);
    this.status = status;
    this.errorType = errorType;
    this.details = details;
    this.headers = headers;
  }
}

/** Malformed request: bad syntax, bad query, missing mode=query, bad X-API-Version. */
export function badRequest(description: string, details?: ErrorDetails): ApiError {
  return new ApiError(400, 'BadRequest', description, details);
}

/** Field-level problems; `details` maps each offending field to its reason. */
export function invalidAttributes(details: ErrorDetails): ApiError {
  return new ApiError(400, 'InvalidAttributes', describeFields(details), details);
}

export function unauthorized(description = 'Missing or invalid API key'): ApiError {
  return new ApiError(401, 'Unauthorized', description);
}

export function forbidden(description = 'This credential may not perform this request', details?: ErrorDetails): ApiError {
  return new ApiError(403, 'Forbidden', description, details);
}

export function notFound(description = 'Not found'): ApiError {
  return new ApiError(404, 'NotFound', description);
}

export function conflict(description: string): ApiError {
  return new ApiError(409, 'Conflict', description);
}

export function payloadTooLarge(): ApiError {
  // The rest of the body is never read, so the connection cannot carry another request.
  return new ApiError(413, 'PayloadTooLarge', 'Request body exceeds the size limit', undefined, { Connection: 'close' });
}

export function tooManyRequests(retryAfterSeconds: number): ApiError {
  return new ApiError(429, 'TooManyRequests', 'Rate limit exceeded', undefined, { 'Retry-After': String(retryAfterSeconds) });
}

/** Every 503 says when to come back: the outages behind it (a database switching over, a dependency restarting) pass in seconds. */
export function serviceUnavailable(description = 'Service unavailable', retryAfterSeconds = 1): ApiError {
  return new ApiError(503, 'ServiceUnavailable', description, undefined, { 'Retry-After': String(retryAfterSeconds) });
}

/** `{a: 'Required', b: {c: 'Invalid'}}` → "a, b[c]"; a bulk list → "[0][email], [1][name]". */
export function describeFields(details: ErrorDetails, prefix = ''): string {
  const names: string[] = [];
  const values = details.object === 'list' && Array.isArray(details.values) ? details.values : null;
  if (values) {
    values.forEach((item, i) => {
      if (item && typeof item === 'object') names.push(describeFields(item as ErrorDetails, `${prefix}[${i}]`));
    });
    return names.filter(Boolean).join(', ');
  }
  for (const [key, reason] of Object.entries(details)) {
    const name = prefix ? `${prefix}[${key}]` : key;
    if (reason && typeof reason === 'object' && !Array.isArray(reason)) names.push(describeFields(reason as ErrorDetails, name));
    else names.push(name);
  }
  return names.join(', ');
}

/** The processor declined: the transaction is stored, and `details` is that stored transaction. */
export function transactionDeclined(transaction: Record<string, unknown>): ApiError {
  const code = transaction.status_code ?? (transaction.status as { code?: unknown } | undefined)?.code ?? 'declined';
  return new ApiError(400, 'TransactionDeclined', `Transaction declined: ${String(code)}`, transaction);
}

/** The body of every error answer (CONTRACT §2). */
export interface ErrorBody {
  object: 'error';
  error_type: string;
  error_description: string;
  details?: Record<string, unknown>;
}

export interface ErrorResponse {
  status: number;
  headers: Record<string, string>;
  body: ErrorBody;
}

/**
 * Any error as the client sees it: an ApiError carries its own status, words and details; Koa's
 * 4xx errors and the database errors a client or an outage can cause map onto our types; anything
 * else is a bare 500 whose words stay in the log.
 */
export function errorResponse(error: unknown): ErrorResponse {
  const apiError = toApiError(error);
  const body: ErrorBody = { object: 'error', error_type: apiError.errorType, error_description: apiError.message };
  if (apiError.details) body.details = apiError.details;
  return { status: apiError.status, headers: { ...apiError.headers }, body };
}

function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  return fromForeignError(error) ?? fromDatabaseError(error) ?? new ApiError(500, 'InternalServerError', 'Internal server error');
}

/** Koa's own HTTP errors (e.g. from the router) mapped onto our error types. */
function fromForeignError(error: unknown): ApiError | null {
  const status = typeof error === 'object' && error !== null ? (error as { status?: unknown }).status : undefined;
  if (typeof status !== 'number' || status < 400 || status >= 500) return null;
  const types: Record<number, string> = { 400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 405: 'BadRequest', 413: 'PayloadTooLarge', 415: 'BadRequest' };
  return new ApiError(status === 405 ? 400 : status, types[status] ?? 'BadRequest', (error as Error).message || 'Bad request');
}

/**
 * The database cannot take the request now, whatever the request: the server unreachable, shut
 * down or starting (57P0x), the connection lost (08xxx), too many clients, or a server that only
 * reads (25006: a standby, or a primary being fenced during a failover).
 */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENOTFOUND', 'EAI_AGAIN',
  '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', '08P01', '53300', '25006',
]);

/** pg's own words when a connection ends under a query: these errors carry no code. */
const CONNECTION_LOST = /^(Connection terminated|Client has encountered a connection error|Client was closed and is not queryable)/;

/** Whether an error means the database (not the request) failed: the caller should retry shortly. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, name, message } = error as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof code === 'string') return UNAVAILABLE_CODES.has(code);
  return name === 'KnexTimeoutError' || (typeof message === 'string' && CONNECTION_LOST.test(message));
}

/** Database errors a client can cause or a dependency outage: never a 500. */
function fromDatabaseError(error: unknown): ApiError | null {
  if (typeof error !== 'object' || error === null) return null;
  if (isDatabaseUnavailable(error)) return serviceUnavailable('The database is unavailable; retry shortly');
  const code = (error as { code?: unknown }).code;
  // Two requests locking the same rows in opposite orders: one is chosen to fail; it may retry.
  if (code === '40P01' || code === '40001') return new ApiError(409, 'Conflict', 'The request conflicted with a concurrent change; retry it');
  // Class 22 (data exception): a bound value out of range for its type, e.g. year 99999.
  if (typeof code === 'string' && code.startsWith('22')) return new ApiError(400, 'BadRequest', 'A value is out of range', { value: 'Out of range' });
  return null;
}
