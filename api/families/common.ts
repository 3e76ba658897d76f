/** Fields every family shares: id, timestamps and custom attributes. */
import type { FieldSpec } from '../engine/family.ts';

export const ATTRS_MAX_BYTES = 8 * 1024;

export const idField: FieldSpec = { store: 'id', type: 'id', v1: 'id', v2: 'id', readOnly: true };

export const timestampFields: FieldSpec[] = [
  { store: 'created_at', type: 'datetime', v1: 'created_at', v2: 'created_at', readOnly: true },
  { store: 'modified_at', type: 'datetime', v1: 'modified_at', v2: 'modified_at', readOnly: true },
];

export const attrsField: FieldSpec = { store: 'attrs', type: 'json', v1: 'attrs', v2: 'attrs', maxLength: ATTRS_MAX_BYTES };

/** A postal address, the same shape in both versions. */
export function addressFields(store: string, apiPrefix: string, types?: string[]): FieldSpec[] {
  return ['address_line_1', 'address_line_2', 'city', 'state_province', 'postal_code', 'country_code'].map((part) => ({
    store: `${store}.${part}`,
    type: 'string',
    v1: `${apiPrefix}.${part}`,
    v2: `${apiPrefix}.${part}`,
    maxLength: 256,
    types,
  }));
}
