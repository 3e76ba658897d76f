/**
 * Accounts: v1 customers and processing accounts, v2 polymorphic accounts, over one table.
 * v1 `email` ⇔ v2 `contact_details.email`; v1 processing `status` ⇔ v2
 * `processing.status.funding`; v1 `funding_style` net/gross/itemized ⇔ v2
 * `processing.settings.funding.style` netted/gross/itemized/manual.
 */
import type { Family, FieldSpec, Version } from '../../engine/family.ts';
import { addressFields, attrsField, idField, timestampFields } from '../common.ts';
import { accountRules } from './rules.ts';
import { PROCESSING_STATUS_TRIGGER } from './triggers.ts';

const CUSTOMER = ['customer'];
const PROCESSING = ['processing'];

export const PROCESSING_STATUSES = ['pending', 'active', 'inactive', 'denied'];

const fields: FieldSpec[] = [
  idField,
  { store: 'type', type: 'string', v1: 'type', v2: 'type', readOnly: true },
  { store: 'name', type: 'string', v1: 'name', v2: 'name', required: true, maxLength: 256 },
  { store: 'email', type: 'email', v1: 'email', v2: 'contact_details.email', maxLength: 256 },
  { store: 'phone', type: 'string', v1: 'phone', v2: 'contact_details.phone', maxLength: 64 },
  ...addressFields('address', 'address'),
  { store: 'primary_processing_id', type: 'id', v1: 'primary_processing_id', v2: 'primary_processing_id', types: CUSTOMER },
  // Stored on the payment method (v2 account_defaults.paying); read and written here for v1.
  { store: 'default_payment_method', type: 'id', v1: 'default_payment_method', types: CUSTOMER },
  // The entity behind the account (CONTRACT §13): given inline (created as an entity row) or by id,
  // stored as `entity_id` only, and shown whole in each version's shape (rules.load).
  { store: 'entity_id', type: 'id', v1: 'legal_entity_id', types: PROCESSING },
  { store: 'entity_id', type: 'id', v2: 'entity_id' },
  { store: 'legal_entity', type: 'json', v1: 'legal_entity', types: PROCESSING, maxLength: 16 * 1024 },
  { store: 'entity', type: 'json', v2: 'entity', maxLength: 16 * 1024 },
  {
    store: 'processing.status', type: 'string', v1: 'status', v2: 'processing.status.funding',
    types: PROCESSING, enum: PROCESSING_STATUSES, default: 'pending',
  },
  {
    store: 'processing.funding.style', type: 'string', v1: 'funding_style', v2: 'processing.settings.funding.style',
    types: PROCESSING, enum: ['netted', 'gross', 'itemized', 'manual'], default: 'netted',
    values: { v1: { net: 'netted' } },
  },
  {
    store: 'processing.funding.delay', type: 'integer', v1: 'funding_delay', v2: 'processing.settings.funding.delay',
    types: PROCESSING, min: 0, max: 10, default: 2,
  },
  {
    store: 'processing.funding.default_descriptor', type: 'string', v1: 'descriptor',
    v2: 'processing.settings.funding.default_descriptor', types: PROCESSING, maxLength: 64,
  },
  { store: 'processing.default_category', type: 'string', v2: 'processing.default_category', types: PROCESSING, maxLength: 64 },
  // The account's processing settings (/processing_settings); on create, another's id copies its funding settings.
  { store: 'processing_settings_id', type: 'id', v1: 'processing_settings_id', v2: 'processing.settings_id', types: PROCESSING },
  // The ledger's buckets (CONTRACT §14), summed when asked for: `fields=*,balance`.
  { store: 'balance', type: 'json', v1: 'balance', v2: 'balance', types: PROCESSING, readOnly: true, nonDefault: true },
  // Funding methods created with the account (CONTRACT §13); never stored on the account itself.
  { store: 'payment_methods', type: 'list', v1: 'payment_methods', v2: 'payment_methods', types: PROCESSING, writeOnly: true },
  // Whether the account stays in use for later payments (integrations send it on create); kept and read back.
  { store: 'keep_active', type: 'boolean', v1: 'keep_active', v2: 'keep_active', default: true },
  attrsField,
  ...timestampFields,
];

export const accounts: Family = {
  name: 'account',
  table: 'accounts',
  idPrefix: 'acct',
  types: ['customer', 'processing'],
  // Client libraries post their Customer objects to /accounts untyped, one or a list.
  createType: 'customer',
  fields,
  objectName: (version: Version, type: string) => (version === 'v2' ? 'account' : type === 'processing' ? 'processing_account' : 'customer'),
  rules: accountRules,
  /** a processing account's `processing.status` changes (entity verification settles it) */
  triggers: [PROCESSING_STATUS_TRIGGER],
};
