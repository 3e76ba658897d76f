/**
 * The one error family of the API. Domain code throws these; the error middleware
 * (api/http/errorHandler.ts) is the only place that turns them into responses.
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

export function forbidden(description = 'This credential may not perform this request'): ApiError {
  return new ApiError(403, 'Forbidden', description);
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

export function serviceUnavailable(description = 'Service unavailable'): ApiError {
  return new ApiError(503, 'ServiceUnavailable', description);
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
