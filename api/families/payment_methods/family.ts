/**
 * Payment methods: cards and bank accounts, attached to an account (v1 `customer_id`, v2
 * `account_id`). Numbers are stored only encrypted; responses show them masked. v2
 * `account_defaults` lives here; v1 reads the same rule as the customer's `default_payment_method`.
 */
import type { Family, FieldSpec } from '../../engine/family.ts';
import { attrsField, idField, timestampFields } from '../common.ts';
import { declarePaymentMethodFamily } from './declared.ts';
import { paymentMethodRules } from './rules.ts';
import { BANK_CURRENCIES, METHOD_STATUSES, VERIFICATION_STATUSES } from './statuses.ts';

const CARD = ['card'];

const BANK = ['bank_account'];

const fields: FieldSpec[] = [
  idField,
  { store: 'type', type: 'string', v1: 'type', v2: 'type', readOnly: true },
  { store: 'account_id', type: 'id', v1: 'customer_id', v2: 'account_id' },
  // v1 clients also name the owner `account_id` (payload.Card({account_id})); shown as customer_id.
  { store: 'account_id', type: 'id', v1: 'account_id', writeOnly: true },
  { store: 'card.card_number', type: 'string', v1: 'card.card_number', v2: 'card.card_number', types: CARD, required: true, maxLength: 32 },
  { store: 'card.expiry', type: 'string', v1: 'card.expiry', v2: 'card.expiry', types: CARD, required: true, maxLength: 7 },
  {
    store: 'card.card_code', type: 'string', v1: 'card.card_code', v2: 'card.card_code', types: CARD, writeOnly: true, neverStored: true,
    maxLength: 4, pattern: { match: /^\d{3,4}$/, reason: 'Must be 3 or 4 digits' },
  },
  { store: 'card.card_brand', type: 'string', v1: 'card.card_brand', v2: 'card.card_brand', types: CARD, readOnly: true },
  { store: 'bank_account.account_number', type: 'string', v1: 'bank_account.account_number', v2: 'bank_account.account_number', types: BANK, required: true, maxLength: 17 },
  { store: 'bank_account.routing_number', type: 'string', v1: 'bank_account.routing_number', v2: 'bank_account.routing_number', types: BANK, required: true, maxLength: 9 },
  {
    store: 'bank_account.account_type', type: 'string', v1: 'bank_account.account_type', v2: 'bank_account.account_type',
    types: BANK, enum: ['checking', 'savings'], default: 'checking',
  },
  {
    store: 'bank_account.account_class', type: 'string', v1: 'bank_account.account_class', v2: 'bank_account.account_class',
    types: BANK, enum: ['personal', 'business'],
  },
  // `account_currency` is the same value under the name integrations send; absent, the currency
  // of the payment the account is typed into, else USD (rules.ts).
  ...['currency', 'account_currency'].map((name): FieldSpec => ({
    store: 'bank_account.currency', type: 'string', v1: `bank_account.${name}`, v2: `bank_account.${name}`, types: BANK, enum: BANK_CURRENCIES,
  })),
  { store: 'account_holder', type: 'string', v1: 'account_holder', v2: 'account_holder', maxLength: 256 },
  { store: 'email', type: 'email', v1: 'email', v2: 'email', maxLength: 256 },
  ...['street_address', 'unit_number', 'city', 'state_province', 'postal_code', 'country_code'].map((part): FieldSpec => ({
    store: `billing_address.${part}`, type: 'string', v1: `billing_address.${part}`, v2: `billing_address.${part}`, maxLength: 256,
  })),
  // Kept for later payments (true), or used for the payment it came with only (false): `status`
  // follows it, and an inactive method is refused when a later payment names it.
  { store: 'keep_active', type: 'boolean', v1: 'keep_active', v2: 'keep_active', default: true },
  { store: 'status', type: 'string', v1: 'status', v2: 'status', readOnly: true, enum: Object.values(METHOD_STATUSES) },
  // The bank's answer on the account (the sandbox's at once: failed when it will refuse debits).
  { store: 'verification_status', type: 'string', v1: 'verification_status', v2: 'verification_status', types: BANK, readOnly: true, enum: Object.values(VERIFICATION_STATUSES) },
  {
    store: 'transfer_type', type: 'string', v1: 'transfer_type', v2: 'transfer_type',
    enum: ['send_only', 'receive_only', 'two_way'],
  },
  { store: 'account_defaults.paying', type: 'string', v2: 'account_defaults.paying', enum: ['payments', 'refunds', 'all'] },
  { store: 'account_defaults.funding', type: 'string', v2: 'account_defaults.funding', enum: ['deposits', 'withdraws', 'all'] },
  attrsField,
  ...timestampFields,
];

export const paymentMethods: Family = declarePaymentMethodFamily({
  name: 'payment_method',
  table: 'payment_methods',
  idPrefix: 'pm',
  types: ['card', 'bank_account'],
  fields,
  objectName: () => 'payment_method',
  rules: paymentMethodRules,
  // a browser's payment-method form, or a token made without an intent (CONTRACT §13)
  clientScopes: { payment_method_form: ['create'], none: ['create'] },
});
