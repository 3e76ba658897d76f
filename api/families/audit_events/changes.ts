/**
 * The database records a change by stored names (`data` keys, minor units); an audit event shows
 * it as the API does in the reader's version: each stored key becomes the field(s) the changed
 * object's family declares for it, with the values converted as that family renders them.
 * Write-only fields never show; a stored key no field declares keeps its stored name.
 */
import type { FamilyRules, FieldSchema, FieldSpec, StoredObject, Version } from '../../engine/family.ts';
import { apiPath } from '../../engine/family.ts';
import { toApi } from '../../schema/values.ts';
import { getPath, isPlainObject, type Json } from '../../engine/view.ts';

type Pair = [unknown, unknown];

/** Every family an audit event may name, by name: the registry (api/families/index.ts) gives them once loaded. */
const auditedFamilies = new Map<unknown, FieldSchema>();

export function registerAuditedFamilies(families: FieldSchema[]): void {
  for (const family of families) auditedFamilies.set(family.name, family);
}

function fieldsByStoredKey(objectType: unknown): Map<string, FieldSpec[]> | null {
  const family = auditedFamilies.get(objectType);
  if (!family) return null;
  const byKey = new Map<string, FieldSpec[]>();
  for (const field of family.fields) {
    const key = field.store.split('.')[0];
    byKey.set(key, [...(byKey.get(key) ?? []), field]);
  }
  return byKey;
}

function changeOf(field: FieldSpec, key: string, version: Version, [before, after]: Pair): [string, Pair] | null {
  const path = apiPath(field, version);
  if (!path || field.writeOnly) return null;
  const inner = field.store.slice(key.length + 1);
  const pick = (value: unknown) => toApi(field, version, inner ? getPath(value, inner) : value);
  const pair: Pair = [pick(before), pick(after)];
  return JSON.stringify(pair[0]) === JSON.stringify(pair[1]) ? null : [path, pair];
}

export function apiChanges(objectType: unknown, stored: unknown, version: Version): Json {
  if (!isPlainObject(stored)) return {};
  const byKey = fieldsByStoredKey(objectType);
  const out: Json = {};
  for (const [key, pair] of Object.entries(stored)) {
    if (!Array.isArray(pair)) continue;
    const declared = byKey?.get(key);
    if (!declared) {
      out[key] = pair;
      continue;
    }
    for (const field of declared) {
      const change = changeOf(field, key, version, pair as Pair);
      if (change) out[change[0]] = change[1];
    }
  }
  return out;
}

export const auditEventRules: FamilyRules = {
  async load(ctx, rows: StoredObject[]) {
    for (const row of rows) row.data = { ...row.data, changes: apiChanges(row.data.object_type, row.data.changes, ctx.version) };
  },
};
