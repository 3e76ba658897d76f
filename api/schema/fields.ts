/**
 * The field schema: how one field of a family is stored and how each API version shows and
 * accepts it. The lowest floor of the object model: the repositories, the query compiler, the
 * engine and reporting all read fields through these types, and this module imports nothing.
 */

export type Version = 'v1' | 'v2';

export type FieldType =
  | 'string'
  | 'email'
  | 'integer'
  | 'number'
  | 'money'
  | 'boolean'
  | 'datetime'
  | 'json'
  | 'list'
  | 'id';

/** Columns every family table has; any other stored field lives in the `data` jsonb column. */
export const COLUMNS = new Set(['id', 'type', 'created_at', 'modified_at']);

export interface FieldSpec {
  /** Storage path: a column name, or a dotted path inside `data` (`address.city`). */
  store: string;
  /**
   * A column the table derives from `store` (generated from `data`), which queries filter and sort
   * on so that its index serves them; the object is still rendered from `data`.
   */
  column?: string;
  type: FieldType;
  /** Dotted API path in each version; a version without one does not have the field. */
  v1?: string;
  v2?: string;
  /** Object types (the `type` column) that carry the field; all when absent. */
  types?: string[];
  /** Must be present on create. */
  required?: boolean;
  /** Stored on create when the client sends nothing. */
  default?: unknown;
  /** Set by the service only. */
  readOnly?: boolean;
  /** Accepted on input, never rendered. */
  writeOnly?: boolean;
  /**
   * Checked on input and then dropped, on every path a body is decoded (create, update, nested,
   * bulk): never in a stored row, so never in its audit history or its events (a card's security code).
   */
  neverStored?: boolean;
  /** A string's required form, with the reason a value that misses it is refused. */
  pattern?: { match: RegExp; reason: string };
  /** Rendered only when named in `fields` (`fields=*,ledger`). */
  nonDefault?: boolean;
  /** Object types that show a `nonDefault` field without being asked (a refund its `ledger`). */
  defaultFor?: string[];
  /** Allowed stored values. */
  enum?: string[];
  /** Per-version renames of values: API value → stored value (v1 funding_style `net` → `netted`). */
  values?: Partial<Record<Version, Record<string, string>>>;
  min?: number;
  max?: number;
  maxLength?: number;
}

/** What reading fields needs of a family: its name (the cache key) and its fields. */
export interface FieldSchema {
  name: string;
  fields: FieldSpec[];
}

export function apiPath(field: FieldSpec, version: Version): string | undefined {
  return version === 'v1' ? field.v1 : field.v2;
}

export function appliesTo(field: FieldSpec, type: string | undefined): boolean {
  return !field.types || type === undefined || field.types.includes(type);
}

/** Fields of a family visible in a version, keyed by API path. */
export function fieldsOf(family: FieldSchema, version: Version): Map<string, FieldSpec> {
  const key = `${family.name}:${version}`;
  let map = fieldCache.get(key);
  if (!map) {
    map = new Map();
    for (const field of family.fields) {
      const path = apiPath(field, version);
      if (path) map.set(path, field);
    }
    fieldCache.set(key, map);
  }
  return map;
}
const fieldCache = new Map<string, Map<string, FieldSpec>>();
