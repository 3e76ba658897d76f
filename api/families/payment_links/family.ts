/**
 * Payment links (CONTRACT §12), both versions: a hosted page (`url`, `<public base URL>/pay/<id>`)
 * where a payer pays a fixed or editable amount, or an invoice's balance. v1 `processing_id` /
 * `customer_id` ⇔ v2 `biller.account_id` / `payer.account_id`. Status `active`, `completed` (a
 * one-time link once paid), `inactive` (disabled); each change emits `payment_link:status`.
 */
import type { Family, FieldSpec } from '../../engine/family.ts';
import { attrsField, idField, timestampFields } from '../common.ts';
import { paymentLinkRules } from './rules.ts';
import { PAYMENT_LINK_STATUS_TRIGGER } from './triggers.ts';

export const LINK_TYPES = ['one_time', 'reusable'];
export const LINK_STATUSES = ['active', 'completed', 'inactive'];

const both = (path: string) => ({ v1: path, v2: path });

const fields: FieldSpec[] = [
  idField,
  { store: 'type', type: 'string', ...both('type'), readOnly: true, enum: LINK_TYPES },
  { store: 'description', type: 'string', ...both('description'), maxLength: 1024 },
  { store: 'amount', type: 'money', ...both('amount') },
  { store: 'amount_editable', type: 'boolean', ...both('amount_editable'), default: false },
  { store: 'biller.account_id', type: 'id', v1: 'processing_id', v2: 'biller.account_id' },
  { store: 'payer.account_id', type: 'id', v1: 'customer_id', v2: 'payer.account_id' },
  { store: 'customer', type: 'json', v1: 'customer', writeOnly: true, maxLength: 4096 },
  { store: 'invoice_id', type: 'id', ...both('invoice_id') },
  { store: 'checkout_options', type: 'json', ...both('checkout_options'), maxLength: 4096 },
  { store: 'status', type: 'string', ...both('status'), enum: LINK_STATUSES, default: 'active' },
  { store: 'url', type: 'string', ...both('url'), readOnly: true },
  { store: 'transaction_id', type: 'id', ...both('transaction_id'), readOnly: true },
  attrsField,
  ...timestampFields,
];

export const paymentLinks: Family = {
  name: 'payment_link',
  table: 'payment_links',
  idPrefix: 'pay',
  types: LINK_TYPES,
  fields,
  objectName: () => 'payment_link',
  rules: paymentLinkRules,
  triggers: [PAYMENT_LINK_STATUS_TRIGGER],
};
