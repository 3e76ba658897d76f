/**
 * The curl request shown beside each operation of the API reference (`x-codeSamples`), built from
 * the collection's declaration like the rest of the document, so a new family gets its examples
 * without writing any. A sample uses two shell variables the reference's introduction sets:
 * `SETTLE_URL` (the web process) and `SETTLE_KEY` (a secret key, sent as the Basic user name).
 * Values a reader must fill in are shown as `<field>`; typed fields get a value of their type.
 */
import { apiPath, appliesTo, type Collection, type FieldSpec, type Version } from './engine/family.ts';
import { toApi } from './schema/values.ts';

export type OperationName = 'list' | 'get' | 'create' | 'update_many' | 'delete_many' | 'update' | 'delete';

/** Stands for the random part of an id (`txn_…`), 24 base62 characters like a real one. */
const SAMPLE_ID_SUFFIX = '2Lk7PqW9xZ3vB8nR4tY6mC1d';
const SAMPLE_ATTRS = { attrs: { reference: 'A-1001' } };

export function sampleId(collection: Collection): string {
  return `${collection.family.idPrefix}_${SAMPLE_ID_SUFFIX}`;
}

function sampleValue(field: FieldSpec, version: Version, key: string): unknown {
  if (field.enum?.length) return toApi(field, version, field.enum[0]);
  switch (field.type) {
    case 'email': return 'ann@example.com';
    case 'money': return 19.99;
    case 'integer': return field.min ?? 1;
    case 'number': return field.min ?? 1;
    case 'boolean': return true;
    case 'datetime': return '2025-01-31 12:00:00';
    case 'json': return {};
    case 'list': return [];
    default: return `<${key}>`;
  }
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let node = target;
  for (const key of keys.slice(0, -1)) node = (node[key] ??= {}) as Record<string, unknown>;
  node[keys[keys.length - 1]] = value;
}

/** The type a sample creates: the collection's own, or the family's first when it has several. */
function sampleType(collection: Collection, version: Version): { stored?: string; api?: unknown } {
  const { family, fixedType } = collection;
  if (fixedType || family.types.length < 2) return { stored: fixedType ?? family.types[0] };
  const typeField = family.fields.find((f) => f.store === 'type');
  const stored = family.types[0];
  return { stored, api: typeField ? toApi(typeField, version, stored) : stored };
}

/** A create body: the type when the collection holds several, every required field, and the amount. */
function createBody(collection: Collection, version: Version): Record<string, unknown> {
  const type = sampleType(collection, version);
  const body: Record<string, unknown> = type.api === undefined ? {} : { type: type.api };
  let money = false;
  for (const field of collection.family.fields) {
    const path = apiPath(field, version);
    if (!path || field.readOnly || !appliesTo(field, type.stored)) continue;
    const required = field.required && field.default === undefined;
    const firstMoney = field.type === 'money' && !money;
    if (!required && !firstMoney) continue;
    money ||= field.type === 'money';
    setPath(body, path, sampleValue(field, version, path.split('.').pop()!));
  }
  return body;
}

/** An update body: custom attributes where the collection has them, else its first writable field. */
function updateBody(collection: Collection, version: Version): Record<string, unknown> {
  const writable = collection.family.fields.filter((f) => apiPath(f, version) && !f.readOnly && f.store !== 'id' && appliesTo(f, sampleType(collection, version).stored));
  if (writable.some((f) => apiPath(f, version) === 'attrs')) return SAMPLE_ATTRS;
  const field = writable[0];
  if (!field) return {};
  const path = apiPath(field, version)!;
  const body: Record<string, unknown> = {};
  setPath(body, path, sampleValue(field, version, path.split('.').pop()!));
  return body;
}

/** The URL on a line of its own: the reference shows samples in a narrow column. */
function curl(version: Version, method: string, url: string, body?: Record<string, unknown>): string {
  const lines = [`curl -u $SETTLE_KEY:${method === 'GET' || method === 'POST' ? '' : ` -X ${method}`}`, `"$SETTLE_URL${url}"`];
  if (version !== 'v1') lines.push(`-H 'X-API-Version: ${version}'`);
  if (body) lines.push(`-H 'Content-Type: application/json'`, `-d '${JSON.stringify(body)}'`);
  return lines.join(' \\\n  ');
}

/** One curl sample per operation of the collection. */
export function curlSamples(collection: Collection, version: Version): Record<OperationName, string> {
  const base = `/${collection.path}`;
  const newestFirst = collection.family.fields.some((f) => apiPath(f, version) === 'created_at') ? '&order_by=desc(created_at)' : '';
  const one = `${base}/${sampleId(collection)}`;
  const some = `${base}?mode=query&id=${sampleId(collection)}|${collection.family.idPrefix}_${SAMPLE_ID_SUFFIX.split('').reverse().join('')}`;
  return {
    list: curl(version, 'GET', `${base}?limit=10${newestFirst}`),
    get: curl(version, 'GET', one),
    create: curl(version, 'POST', base, createBody(collection, version)),
    update_many: curl(version, 'PUT', some, updateBody(collection, version)),
    delete_many: curl(version, 'DELETE', some),
    update: curl(version, 'PUT', one, updateBody(collection, version)),
    delete: curl(version, 'DELETE', one),
  };
}
