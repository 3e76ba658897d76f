// The console's only way to the server: the public JSON API on this origin, with the secret key
// from this tab's sessionStorage as HTTP Basic username. The key is never put in a URL or a cookie.

const STORAGE = 'settle.console.key';

export function storedKey() {
  return sessionStorage.getItem(STORAGE);
}

export function forgetKey() {
  sessionStorage.removeItem(STORAGE);
}

/** 'test' or 'live' for a secret key, null for anything else (client tokens included). */
export function keyMode(key) {
  if (/^test_secret_key_[A-Za-z0-9]+$/.test(key)) return 'test';
  if (/^secret_key_[A-Za-z0-9]+$/.test(key)) return 'live';
  return null;
}

export class ApiError extends Error {
  constructor(status, body) {
    const description = body && typeof body.error_description === 'string' ? body.error_description : `HTTP ${status}`;
    super(description);
    this.status = status;
    this.type = body && typeof body.error_type === 'string' ? body.error_type : 'Error';
    this.details = body && typeof body.details === 'object' && body.details !== null ? body.details : {};
  }

  /** One line an operator can act on: the type, the description and each detail. */
  explain() {
    const details = Object.entries(this.details)
      .filter(([, reason]) => typeof reason === 'string')
      .map(([field, reason]) => `${field}: ${reason}`);
    return [`${this.type}: ${this.message}`, ...details].join(' — ');
  }
}

/** Called when the server no longer accepts the stored key (revoked while signed in). */
let onUnauthorized = () => {};
export function whenUnauthorized(callback) {
  onUnauthorized = callback;
}

function authorization(key) {
  const bytes = new TextEncoder().encode(`${key}:`);
  return `Basic ${btoa(String.fromCharCode(...bytes))}`;
}

/**
 * Sends one request with the key in its Authorization header and answers the Response of a 200;
 * anything else rejects with an ApiError made from the error body.
 */
async function send(method, path, { params, body, version = 'v1', key = storedKey(), accept = 'application/json', idempotencyKey } = {}) {
  const query = params ? new URLSearchParams(params).toString() : '';
  // The console names itself, so the audit history tells its changes from a script's with the same key.
  const headers = { Authorization: authorization(key ?? ''), 'X-API-Version': version, Accept: accept, 'X-Settle-Console': '1' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (idempotencyKey) headers['Idempotency-Key'] = idempotencyKey;
  const response = await fetch(query ? `${path}?${query}` : path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store',
  });
  if (response.status === 200) return response;
  const error = new ApiError(response.status, await jsonOf(response));
  if (response.status === 401 && key === storedKey()) onUnauthorized(error);
  throw error;
}

async function jsonOf(response) {
  try {
    return await response.json();
  } catch {
    return null; // not JSON: the status says enough
  }
}

/**
 * `path` is an API path, `params` its query as pairs or an object; `version` 'v1' (default) or 'v2'.
 * Resolves to the parsed body of a 200, rejects with an ApiError otherwise.
 */
export async function api(method, path, options = {}) {
  return jsonOf(await send(method, path, options));
}

/**
 * A list or aggregate as CSV, a Blob. Without `limit` in `params` the API answers every matching
 * row, up to its export ceiling (SETTLE_EXPORT_MAX_ROWS), beyond which it is a 400 (an ApiError).
 */
export async function csvExport(path, { params = {}, version = 'v1' } = {}) {
  const response = await send('GET', path, { params: { ...params, format: 'csv' }, version, accept: 'text/csv' });
  return response.blob();
}

/** Keeps a key the API has just made (a rolled one) for this tab. */
export function useKey(key) {
  sessionStorage.setItem(STORAGE, key);
}

/** Checks a key against the API and keeps it for this tab when it works; answers the caller's org. */
export async function signIn(key) {
  const orgs = await api('GET', '/accounts/orgs', { key });
  sessionStorage.setItem(STORAGE, key);
  return orgs.values[0];
}

/** A page of a list: asks for one more row than shown, so "Next" needs no count of the table. */
export async function listPage(path, { params = {}, limit = 25, offset: from = 0, version = 'v1' } = {}) {
  const offset = Math.max(0, Math.floor(Number(from) || 0));
  const answer = await api('GET', path, { params: { ...params, limit: String(limit + 1), offset: String(offset) }, version });
  return { rows: answer.values.slice(0, limit), more: answer.values.length > limit, offset, limit };
}

/** A q expression's string literal. */
export function quote(value) {
  return JSON.stringify(String(value));
}
