/**
 * A version's view of a family: rendering stored rows as API objects and mapping client input
 * onto storage. One storage model, two renderings and two input mappings.
 */
import { badRequest, invalidAttributes, type ErrorDetails } from '../errors.ts';
import { isForbiddenKey } from '../untrustedInput.ts';
import { COLUMNS, apiPath, appliesTo, fieldsOf, type FieldSpec, type Version } from '../schema/fields.ts';
import type { StoredObject } from '../db/storedRow.ts';
import type { Family } from './family.ts';
import { toApi, toStored } from '../schema/values.ts';

export type Json = Record<string, unknown>;

export function isPlainObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads own properties only: a path never reaches into a prototype. */
export function getPath(source: unknown, dotted: string): unknown {
  return readKeys(source, dotted.split('.'));
}

/** Writes through a dotted path; a prototype-reaching segment is refused, never followed. */
export function setPath(target: Json, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  if (keys.some(isForbiddenKey)) throw badRequest(`${dotted}: not allowed as a name`, { [dotted]: 'Not allowed as a name' });
  let current = target;
  for (const key of keys.slice(0, -1)) {
    if (!Object.hasOwn(current, key) || !isPlainObject(current[key])) current[key] = {};
    current = current[key] as Json;
  }
  current[keys[keys.length - 1]] = value;
}

export function storedValue(row: StoredObject, field: FieldSpec): unknown {
  if (COLUMNS.has(field.store)) return (row as unknown as Json)[field.store];
  return getPath(row.data, field.store);
}

export interface RenderOptions {
  /** extra non-default fields named in `fields` */
  include?: Set<string>;
}

/** One field as `render` writes it: its API path and where it is stored, split once. */
interface RenderStep {
  path: string;
  field: FieldSpec;
  /** the API path's keys */
  at: string[];
  /** a column's name, or null when the field is stored in `data` */
  column: string | null;
  /** the storage path's keys inside `data` */
  from: string[];
}

const renderPlans = new WeakMap<Map<string, FieldSpec>, RenderStep[]>();

/** The fields a version renders, in order, with their paths split: made once per family and version. */
function renderPlan(family: Family, version: Version): RenderStep[] {
  const fields = fieldsOf(family, version);
  let plan = renderPlans.get(fields);
  if (!plan) {
    plan = [...fields]
      .filter(([path, field]) => !field.writeOnly && path !== 'id')
      .map(([path, field]) => ({ path, field, at: path.split('.'), column: COLUMNS.has(field.store) ? field.store : null, from: field.store.split('.') }));
    renderPlans.set(fields, plan);
  }
  return plan;
}

function readKeys(source: unknown, keys: string[]): unknown {
  let current = source;
  for (const key of keys) {
    if (!isPlainObject(current) || !Object.hasOwn(current, key)) return undefined;
    current = current[key];
  }
  return current;
}

export function render(family: Family, version: Version, row: StoredObject, options: RenderOptions = {}): Json {
  const out: Json = { id: row.id, object: family.objectName(version, row.type) };
  for (const step of renderPlan(family, version)) {
    const { field } = step;
    if (!appliesTo(field, row.type)) continue;
    if (field.nonDefault && !options.include?.has(step.path) && !field.defaultFor?.includes(row.type)) continue;
    const stored = step.column === null ? readKeys(row.data, step.from) : (row as unknown as Json)[step.column];
    // Schema paths are the service's own: no prototype-reaching key to refuse.
    let target = out;
    for (let i = 0; i < step.at.length - 1; i++) {
      const key = step.at[i];
      if (!Object.hasOwn(target, key) || !isPlainObject(target[key])) target[key] = {};
      target = target[key] as Json;
    }
    target[step.at[step.at.length - 1]] = toApi(field, version, stored);
  }
  return out;
}

/**
 * Reads one API path of a stored row as `render` would show it, without rendering the rest: for
 * exports, which read a few columns of many rows. Null when the path is not one field (an object
 * holding fields, a key inside a json field): those go through `render`.
 */
export function fieldReader(family: Family, version: Version, path: string): ((row: StoredObject) => unknown) | null {
  if (path === 'id') return (row) => row.id;
  if (path === 'object') return (row) => family.objectName(version, row.type);
  const field = fieldsOf(family, version).get(path);
  if (!field || field.writeOnly) return null;
  return (row) => (appliesTo(field, row.type) ? toApi(field, version, storedValue(row, field)) : undefined);
}

/** True when a dotted path names a field, an object holding fields (`status` in v2), or a key inside a json field. */
export function isKnownPath(family: Family, version: Version, dotted: string): boolean {
  const fields = fieldsOf(family, version);
  if (fields.has(dotted)) return !fields.get(dotted)!.writeOnly;
  for (const known of fields.keys()) if (known.startsWith(`${dotted}.`)) return true;
  const parts = dotted.split('.');
  for (let i = parts.length - 1; i > 0; i--) {
    if (fields.get(parts.slice(0, i).join('.'))?.type === 'json') return true;
  }
  return false;
}

/**
 * Keeps exactly the requested top-level or dotted paths of a rendered object (`fields=id,name`):
 * `object` only when named, so a client library hands back a plain map for a partial object
 * instead of a typed one it would treat as whole.
 */
export function project(rendered: Json, paths: string[]): Json {
  const out: Json = {};
  for (const path of paths) {
    const value = getPath(rendered, path);
    if (value !== undefined) setPath(out, path, value);
  }
  return out;
}

export interface DecodedInput {
  /** stored values by storage path (columns and data paths) */
  values: Map<string, unknown>;
}

export type InputMode = 'create' | 'update';

/**
 * Maps a client body onto storage paths, checking every key against the schema.
 * Unknown keys, read-only fields and bad values are collected into one InvalidAttributes error.
 * `given`: stored values the service sets itself (no client field names them), which count as
 * given before the defaults fill in and the required fields are checked.
 */
export function decodeInput(family: Family, version: Version, type: string | undefined, body: Json, mode: InputMode, given?: Map<string, unknown>): DecodedInput {
  const plan = inputPlan(family, version);
  const details: ErrorDetails = {};
  const values = new Map<string, unknown>();
  walkUnknown(body, '', plan, type, details);
  for (const { path, field, at } of plan.steps) {
    if (!appliesTo(field, type)) continue;
    const input = readKeys(body, at);
    if (input === undefined) continue;
    if (field.readOnly) {
      if (path !== 'id' && path !== 'object' && path !== 'type') setPath(details, path, 'Read-only field');
      continue;
    }
    const converted = toStored(field, version, input);
    if (!converted.ok) setPath(details, path, converted.reason);
    else if (!field.neverStored) values.set(field.store, converted.value);
  }
  for (const [store, value] of given ?? []) values.set(store, value);
  if (mode === 'create') fillDefaults(family, version, type, values, details);
  if (Object.keys(details).length) throw invalidAttributes(details);
  return { values };
}

/** A version's input fields with their API paths split, and every path that holds fields inside it: made once per family and version. */
interface InputPlan {
  steps: Array<{ path: string; field: FieldSpec; at: string[] }>;
  fields: Map<string, FieldSpec>;
  /** `a` and `a.b` for a field at `a.b.c` */
  containers: Set<string>;
}

const inputPlans = new WeakMap<Map<string, FieldSpec>, InputPlan>();

function inputPlan(family: Family, version: Version): InputPlan {
  const fields = fieldsOf(family, version);
  let plan = inputPlans.get(fields);
  if (!plan) {
    const steps = [...fields].map(([path, field]) => ({ path, field, at: path.split('.') }));
    const containers = new Set(steps.flatMap(({ at }) => at.slice(1).map((_, i) => at.slice(0, i + 1).join('.'))));
    plan = { steps, fields, containers };
    inputPlans.set(fields, plan);
  }
  return plan;
}

function fillDefaults(family: Family, version: Version, type: string | undefined, values: Map<string, unknown>, details: ErrorDetails): void {
  for (const field of family.fields) {
    if (!appliesTo(field, type) || values.has(field.store)) continue;
    // A default object or list is copied, so no row shares (and changes) the declaration's own.
    if (field.default !== undefined) values.set(field.store, typeof field.default === 'object' && field.default !== null ? structuredClone(field.default) : field.default);
    else if (field.required) {
      const path = apiPath(field, version) ?? field.store;
      if (getPath(details, path) === undefined) setPath(details, path, 'Required');
    }
  }
}

/** Records every body key that no field of this version (or its containing objects) accounts for. */
function walkUnknown(body: Json, prefix: string, plan: InputPlan, type: string | undefined, details: ErrorDetails): void {
  for (const [key, value] of Object.entries(body)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (path === 'object') continue;
    const field = key.includes('.') ? undefined : plan.fields.get(path);
    if (field) {
      if (!appliesTo(field, type)) setPath(details, path, `Not a field of ${type}`);
      continue;
    }
    // A dotted key is not a path: `{"address.city": …}` would otherwise be read as nothing.
    const isContainer = !key.includes('.') && plan.containers.has(path);
    if (!isContainer) setPath(details, path, 'Unknown field');
    else if (!isPlainObject(value)) setPath(details, path, 'Must be an object');
    else walkUnknown(value, path, plan, type, details);
  }
}

/** Applies decoded values onto a stored object (new or existing) without mutating the input. */
export function applyValues(row: StoredObject, values: Map<string, unknown>): StoredObject {
  const next: StoredObject = { ...row, data: structuredClone(row.data) };
  for (const [store, value] of values) {
    if (COLUMNS.has(store)) (next as unknown as Json)[store] = value;
    else setPath(next.data, store, value);
  }
  return next;
}
