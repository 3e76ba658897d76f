/**
 * Invoice items: one stored row kind (`item_`, table `invoice_items`), three views (CONTRACT §12).
 * v1 `line_item` at `/line_items` (`entry_type` charge|payment, `amount`, `qty`, `total`, free
 * text `type`); v2 `invoice_item` at `/invoice_items` (a charge: `type` line_item,
 * `line_item{value, qty, value_units}`) and v2 `payment_allocation` at `/payment_allocations`
 * (a payment: `amount`, `transaction_id`, `external_payment`). The `type` column is the entry
 * type; each collection is a family over the same table that differs only in how a create's
 * `type` resolves to it.
 */
import type { Family, FieldSpec, Version } from '../../engine/family.ts';
import { attrsField, idField, timestampFields } from '../common.ts';
import { declareInvoiceFamily } from './declared.ts';
import { everyValueIs, freeTextKind } from './kinds.ts';
import { itemRules } from './itemRules.ts';

const CHARGE = ['charge'];
const PAYMENT = ['payment'];

const shared: FieldSpec[] = [
  idField,
  { store: 'entry_type', type: 'string', v1: 'entry_type', enum: ['charge', 'payment'] },
  { store: 'invoice_id', type: 'id', v1: 'invoice_id', v2: 'invoice_id', required: true },
  { store: 'label', type: 'string', v1: 'type', maxLength: 128 },
  { store: 'item_type', type: 'string', v2: 'type', types: CHARGE, enum: ['line_item'], default: 'line_item' },
  { store: 'description', type: 'string', v1: 'description', v2: 'description', maxLength: 128 },
  { store: 'amount', type: 'money', v1: 'amount' },
  { store: 'amount', type: 'money', v2: 'line_item.value', types: CHARGE },
  { store: 'amount', type: 'money', v2: 'amount', types: PAYMENT },
  { store: 'qty', type: 'number', v1: 'qty', min: 0.0001, max: 1e6 },
  { store: 'qty', type: 'number', v2: 'line_item.qty', types: CHARGE, min: 0.0001, max: 1e6 },
  // `percentage`: `amount` / `line_item.value` is a percent of the invoice's number charges (8.5 → 8.5 %).
  { store: 'value_units', type: 'string', v1: 'amount_type', enum: ['number', 'percentage'] },
  { store: 'value_units', type: 'string', v2: 'line_item.value_units', types: CHARGE, enum: ['number', 'percentage'] },
  { store: 'total', type: 'money', v1: 'total', readOnly: true },
  { store: 'line_number', type: 'integer', v1: 'line_number', v2: 'line_number', min: 0, max: 1e6 },
  { store: 'transaction_id', type: 'id', v1: 'transaction_id', v2: 'transaction_id', readOnly: true },
  // v1 line items decode before their kind is known (entry_type decides it), so v1 fields carry no `types`.
  { store: 'external_payment', type: 'boolean', v1: 'external_payment' },
  { store: 'external_payment', type: 'boolean', v2: 'external_payment', types: PAYMENT },
  attrsField,
  ...timestampFields,
];

const objectName = (version: Version, type: string) => (version === 'v1' ? 'line_item' : type === 'payment' ? 'payment_allocation' : 'invoice_item');

function itemFamily(name: string, kind: string, renames: Parameters<typeof freeTextKind>[1]): Family {
  return { name, table: 'invoice_items', idPrefix: 'item', types: [kind], fields: [freeTextKind(kind, renames), ...shared], objectName, rules: itemRules };
}

/** `/line_items`: the kind comes from `entry_type` (charge by default), set by the rules. */
export const lineItems = itemFamily('line_item', 'item', {});
/** `/invoice_items`: charges; v2 `type` line_item names them. */
export const invoiceItems = declareInvoiceFamily('charge', itemFamily('invoice_item', 'charge', { v1: everyValueIs('charge'), v2: { line_item: 'charge' } }));
/** `/payment_allocations`: payments. */
export const paymentAllocations = itemFamily('payment_allocation', 'payment', {});

/** The family that renders a stored item row in a version (the same fields for all three). */
export const itemView = lineItems;
