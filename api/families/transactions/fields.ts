/**
 * The transaction table's shape: its fields (one table, two views: v1 `customer_id`/`processing_id`/
 * `payment_method_id`, `credit`/`reversal`, status as a string, `ledger`; v2 `sender`/`receiver`,
 * `payout`/`withdraw`, `status.value`, `transfers`), types and id prefix, without the family's
 * rules: what the reporting process needs to mirror and query transactions, and all it loads.
 */
import type { Family, FieldSpec } from '../../engine/family.ts';
import { attrsField, idField, timestampFields } from '../common.ts';
import { STATUSES, TYPES } from './lifecycle.ts';

const fields: FieldSpec[] = [
  idField,
  { store: 'type', type: 'string', v1: 'type', v2: 'type', readOnly: true, enum: TYPES, values: { v1: { credit: 'payout', reversal: 'withdraw' } } },
  // Zero only for a card verification (rules.ts `finishCreate`); every other transaction moves money.
  { store: 'amount', type: 'money', v1: 'amount', v2: 'amount', min: 0 },
  { store: 'currency', type: 'string', v1: 'currency', v2: 'currency', enum: ['USD', 'CAD'], default: 'USD' },
  { store: 'status', type: 'string', v1: 'status', v2: 'status.value', enum: STATUSES },
  { store: 'status_code', type: 'string', v1: 'status_code', v2: 'status.code', readOnly: true },
  { store: 'status_message', type: 'string', v1: 'status_message', v2: 'status.message', readOnly: true },
  { store: 'description', type: 'string', v1: 'description', v2: 'description', maxLength: 1024 },
  { store: 'order_number', type: 'string', v1: 'order_number', v2: 'order_number', maxLength: 128 },
  // The statement descriptor the payer's bank shows.
  { store: 'descriptor', type: 'string', v1: 'descriptor', v2: 'descriptor', maxLength: 32 },
  { store: 'customer_id', type: 'id', v1: 'customer_id' },
  { store: 'processing_id', type: 'id', v1: 'processing_id', v2: 'processing_id' },
  { store: 'payment_method_id', type: 'id', v1: 'payment_method_id' },
  { store: 'sender.account_id', type: 'id', v2: 'sender.account_id' },
  { store: 'sender.method_id', type: 'id', v2: 'sender.method_id' },
  { store: 'receiver.account_id', type: 'id', v2: 'receiver.account_id' },
  { store: 'receiver.method_id', type: 'id', v2: 'receiver.method_id' },
  // Inline method on input; a masked snapshot of the method on output.
  { store: 'payment_method', type: 'json', v1: 'payment_method', v2: 'payment_method' },
  { store: 'payment_method', type: 'json', v2: 'sender.method', writeOnly: true },
  // A payout's (or withdrawal's) method typed inline on the receiver side, as v2 clients send it.
  { store: 'payment_method', type: 'json', v2: 'receiver.method', writeOnly: true, types: ['payout', 'refund', 'withdraw'] },
  { store: 'payment_method_type', type: 'string', v1: 'payment_method_type', v2: 'payment_method_type', readOnly: true },
  { store: 'card_brand', type: 'string', v1: 'card_brand', v2: 'card_brand', readOnly: true },
  // The sandbox's risk screen allows every payment; a real screen plugs in where the processor does.
  { store: 'risk_flag', type: 'string', v1: 'risk_flag', v2: 'risk_flag', readOnly: true, enum: ['allowed', 'denied', 'in_review'] },
  // Funding (CONTRACT §14), set when a paying transaction is processed: by the funding trigger, or
  // by a card payment's statement with the trigger's functions (migration 20261207002200).
  { store: 'fee', type: 'money', v1: 'fee', v2: 'fee', readOnly: true },
  // The convenience fee charged to the payer on top of the amount: 0 unless one was charged,
  // stored so by a trigger every writer passes (migrations/20261130004200_conv_fee_stored.ts).
  { store: 'conv_fee', type: 'money', v1: 'conv_fee', v2: 'conv_fee', readOnly: true, nonDefault: true },
  { store: 'funding_status', type: 'string', v1: 'funding_status', v2: 'funding_status', readOnly: true, enum: ['pending', 'funded', 'held'] },
  { store: 'funding_date', type: 'string', v1: 'funding_date', v2: 'funding_date', readOnly: true },
  { store: 'funding_timing', type: 'string', v2: 'funding_timing', enum: ['standard', 'rapid', 'instant'] },
  { store: 'funding_delay', type: 'integer', v2: 'funding_delay', min: 0, max: 10 },
  // Input on create (links and splits); the rows of the transfers table on output.
  // A refund shows its ledger by default in both versions: the entry tying it to the payment it refunds.
  { store: 'ledger', type: 'list', v1: 'ledger', nonDefault: true, defaultFor: ['refund'] },
  { store: 'ledger', type: 'list', v2: 'ledger', types: ['refund'], readOnly: true },
  { store: 'transfers', type: 'list', v2: 'transfers' },
  // Invoices a payment pays (api/families/transactions/allocations.ts); the invoice items table on output.
  { store: 'allocations', type: 'list', v1: 'allocations', nonDefault: true },
  { store: 'allocations', type: 'list', v2: 'invoice_allocations', nonDefault: true },
  { store: 'payment_link_id', type: 'id', v1: 'payment_link_id', v2: 'payment_link_id', nonDefault: true },
  // `automatic` for payments the billing run makes (api/families/billing_schedules/autopay.ts).
  { store: 'trigger', type: 'string', v1: 'trigger', v2: 'trigger', readOnly: true, enum: ['manual', 'automatic'], default: 'manual' },
  attrsField,
  ...timestampFields,
];

/** The declaration without rules, triggers or client scopes (api/families/transactions/family.ts adds them). */
export const transactionShape: Family = {
  name: 'transaction',
  table: 'transactions',
  idPrefix: 'txn',
  types: TYPES,
  fields,
  objectName: () => 'transaction',
};
