/**
 * Invoices (CONTRACT §12): v1 `customer_id`/`processing_id`, `amount_due`/`total_due`/
 * `total_paid`, `autopay_allowed`; v2 `payer`/`biller`, `totals{…}`, `autopay_settings.allowed`.
 * Items are rows of their own (./items.ts), shown nested in `items`. Totals and status are kept
 * by the recompute (./recompute.ts) whenever an item changes; money is in integer minor units.
 */
import type { Family, FieldSpec } from '../../engine/family.ts';
import { attrsField, idField, timestampFields } from '../common.ts';
import { declareInvoiceFamily } from './declared.ts';
import { freeTextKind } from './kinds.ts';
import { invoiceRules } from './rules.ts';

export const INVOICE_STATUSES = ['draft', 'unpaid', 'partially_paid', 'paid', 'closed', 'open'];

const readMoney = (store: string, v1: string | undefined, v2: string): FieldSpec => ({ store, type: 'money', v1, v2, readOnly: true });

const fields: FieldSpec[] = [
  freeTextKind('invoice'),
  idField,
  { store: 'invoice_type', type: 'string', v1: 'type', v2: 'type', maxLength: 64 },
  { store: 'payer.account_id', type: 'id', v1: 'customer_id', v2: 'payer.account_id' },
  { store: 'customer', type: 'json', v1: 'customer', writeOnly: true, maxLength: 4096 },
  { store: 'payer.method_id', type: 'id', v1: 'payment_method_id', v2: 'payer.method_id' },
  { store: 'biller.account_id', type: 'id', v1: 'processing_id', v2: 'biller.account_id' },
  { store: 'due_date', type: 'string', v1: 'due_date', v2: 'due_date', required: true, maxLength: 32 },
  { store: 'description', type: 'string', v1: 'description', v2: 'description', maxLength: 1024 },
  { store: 'number', type: 'string', v1: 'number', v2: 'number', maxLength: 64 },
  { store: 'external_uid', type: 'string', v1: 'external_uid', v2: 'external_uid', maxLength: 128 },
  {
    store: 'status', type: 'string', v1: 'status', v2: 'status', enum: INVOICE_STATUSES, default: 'unpaid',
    values: { v1: { closed: 'closed', canceled: 'closed', cancelled: 'closed' } },
  },
  { store: 'items', type: 'list', v1: 'items', v2: 'items' },
  readMoney('totals.total', 'total_due', 'totals.total'),
  readMoney('totals.total', undefined, 'totals.subtotal'),
  readMoney('totals.paid', 'total_paid', 'totals.paid'),
  readMoney('totals.balance_due', 'amount_due', 'totals.balance_due'),
  { store: 'paid_timestamp', type: 'datetime', v1: 'paid_timestamp', v2: 'paid_timestamp', readOnly: true },
  { store: 'autopay_allowed', type: 'boolean', v1: 'autopay_allowed', v2: 'autopay_settings.allowed', default: true },
  { store: 'billing_contact', type: 'json', v1: 'billing_contact', v2: 'billing_contact', maxLength: 4096 },
  { store: 'billing_schedule_id', type: 'id', v1: 'billing_schedule_id', v2: 'billing_schedule_id', readOnly: true },
  attrsField,
  ...timestampFields,
];

export const invoices: Family = declareInvoiceFamily('invoice', {
  name: 'invoice',
  table: 'invoices',
  idPrefix: 'inv',
  types: ['invoice'],
  fields,
  objectName: () => 'invoice',
  rules: invoiceRules,
});
