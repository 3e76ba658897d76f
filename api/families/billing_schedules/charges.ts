/**
 * Billing charges: v1 `billing_charge` at `/billing_charges` (`amount`, `qty`, free text `type`)
 * and v2 `billing_item` at `/billing_items` (`type` line_item, `line_item{value, qty,
 * value_units}`), one row (`bcrg_`). A charge is billed on each invoice of its schedule whose date
 * falls in its own `start_date`…`end_date`.
 */
import type { Family, FieldSpec, Version } from '../../engine/family.ts';
import { attrsField, idField, timestampFields } from '../common.ts';
import { freeTextKind } from '../invoices/kinds.ts';
import { chargeRules } from './chargeRules.ts';

const fields: FieldSpec[] = [
  freeTextKind('charge', { v2: { line_item: 'charge' } }),
  idField,
  { store: 'billing_schedule_id', type: 'id', v1: 'billing_schedule_id', v2: 'billing_schedule_id', required: true },
  { store: 'label', type: 'string', v1: 'type', maxLength: 128 },
  { store: 'item_type', type: 'string', v2: 'type', enum: ['line_item'], default: 'line_item' },
  { store: 'description', type: 'string', v1: 'description', v2: 'description', maxLength: 128 },
  { store: 'amount', type: 'money', v1: 'amount', v2: 'line_item.value' },
  { store: 'qty', type: 'number', v1: 'qty', v2: 'line_item.qty', min: 0.0001, max: 1e6 },
  { store: 'value_units', type: 'string', v1: 'amount_type', v2: 'line_item.value_units', enum: ['number'] },
  { store: 'total', type: 'money', v1: 'total', v2: 'line_item.total', readOnly: true },
  { store: 'start_date', type: 'string', v1: 'start_date', v2: 'start_date', maxLength: 32 },
  { store: 'end_date', type: 'string', v1: 'end_date', v2: 'end_date', maxLength: 32 },
  attrsField,
  ...timestampFields,
];

export const billingCharges: Family = {
  name: 'billing_charge',
  table: 'billing_charges',
  idPrefix: 'bcrg',
  types: ['charge'],
  fields,
  objectName: (version: Version) => (version === 'v1' ? 'billing_charge' : 'billing_item'),
  rules: chargeRules,
};
