/**
 * Request logs (CONTRACT §20): one row per API request, kept in the reporting store (ClickHouse),
 * not in Postgres, so this declaration is not a registered collection: it gives the fields that
 * `GET /request_logs` filters, selects, aggregates and groups through the reporting compiler, each
 * stored in the ClickHouse column of its name.
 */
import type { Family, FieldSpec } from '../../engine/family.ts';

const both = (path: string) => ({ v1: path, v2: path, readOnly: true });

/**
 * The columns a logged request is shipped in, in order: a web process keeps each request as a
 * `RequestLogTuple` of these values and ships a batch as lines of JSON, these names first
 * (api/http/requestLog.ts).
 */
export const REQUEST_LOG_SHIPPED = ['org_id', 'environment', 'id', 'method', 'route', 'path', 'status', 'duration_ms', 'key_prefix',
  'idempotency_key', 'api_version', 'error_type', 'ip', 'user_agent', 'created_at'] as const;

/**
 * A logged request as a web process keeps and ships it: `RequestLogRow`'s values in
 * REQUEST_LOG_SHIPPED's order, created_at as the store reads it (`storedLogTime`).
 */
export type RequestLogTuple = [
  org_id: string, environment: string, id: string, method: string, route: string, path: string, status: number, duration_ms: number,
  key_prefix: string | null, idempotency_key: string | null, api_version: string | null, error_type: string | null, ip: string, user_agent: string,
  created_at: string,
];

let cachedSecond = Number.NaN;
let cachedPrefix = '';
/**
 * Epoch milliseconds as the store reads a DateTime64(3) in UTC (`2026-11-26 08:00:00.123`): the
 * second's text is made once per second seen.
 */
export function storedLogTime(ms: number): string {
  const whole = Math.floor(ms);
  const second = Math.floor(whole / 1000);
  if (second !== cachedSecond) {
    cachedSecond = second;
    cachedPrefix = new Date(second * 1000).toISOString().slice(0, 19).replace('T', ' ');
  }
  return `${cachedPrefix}.${String(whole - second * 1000).padStart(3, '0')}`;
}

/** A logged request as the store holds it (and as web processes of an earlier release shipped it, one object per request). */
export interface RequestLogRow {
  org_id: string;
  environment: string;
  id: string;
  method: string;
  /** the route template (`/:collection/:id` with the collection named), or the path when none matched */
  route: string;
  /** the path without its query string: no query value is ever logged */
  path: string;
  status: number;
  duration_ms: number;
  key_prefix: string | null;
  idempotency_key: string | null;
  api_version: string | null;
  error_type: string | null;
  ip: string;
  user_agent: string;
  /** ISO 8601 with milliseconds, UTC */
  created_at: string;
}

const fields: FieldSpec[] = [
  { store: 'id', type: 'string', ...both('id') },
  { store: 'method', type: 'string', ...both('method') },
  { store: 'route', type: 'string', ...both('route') },
  { store: 'path', type: 'string', ...both('path') },
  { store: 'status', type: 'integer', ...both('status') },
  { store: 'duration_ms', type: 'integer', ...both('duration_ms') },
  { store: 'key_prefix', type: 'string', ...both('key_prefix') },
  { store: 'idempotency_key', type: 'string', ...both('idempotency_key') },
  { store: 'api_version', type: 'string', ...both('api_version') },
  { store: 'error_type', type: 'string', ...both('error_type') },
  { store: 'ip', type: 'string', ...both('ip') },
  { store: 'user_agent', type: 'string', ...both('user_agent') },
  { store: 'created_at', type: 'datetime', ...both('created_at') },
];

export const requestLogs: Family = {
  name: 'request_log',
  table: 'request_logs',
  idPrefix: 'req',
  types: ['request_log'],
  fields,
  objectName: () => 'request_log',
};

/** Stored field → ClickHouse column: the same name. */
export const REQUEST_LOG_COLUMNS: ReadonlyMap<string, { name: string }> = new Map(fields.map((f) => [f.store, { name: f.store }]));
