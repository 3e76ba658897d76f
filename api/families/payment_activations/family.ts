/**
 * Payment activations (CONTRACT §13, v1): the v1 twin of a `payouts_enrollment_link` intent. A
 * link (`url`) a recipient opens to connect a bank account, e-mailed to each of `send_to` (the
 * documented curl spelling `sent_to` is the same field); `account_id` is the account the
 * enrollment creates. Status pending → finished | expired (7 days).
 */
import type { Family, FieldSpec } from '../../engine/family.ts';
import { attrsField, idField, timestampFields } from '../common.ts';
import { STATUSES } from '../intents/links.ts';
import { paymentActivationRules } from './rules.ts';
import { PAYMENT_ACTIVATION_STATUS_TRIGGER } from '../intents/triggers.ts';

const both = (path: string) => ({ v1: path, v2: path });

const fields: FieldSpec[] = [
  idField,
  { store: 'intent.entity_name', type: 'string', ...both('intent.entity_name'), maxLength: 256 },
  { store: 'intent.entity_type', type: 'string', ...both('intent.entity_type'), enum: ['business', 'individual'] },
  { store: 'intent.purpose', type: 'string', ...both('intent.purpose'), maxLength: 1024 },
  { store: 'intent.type', type: 'string', ...both('intent.type'), enum: ['bank_account'], default: 'bank_account' },
  { store: 'send_to', type: 'list', ...both('send_to') },
  { store: 'send_to', type: 'list', ...both('sent_to') },
  { store: 'status', type: 'string', ...both('status'), readOnly: true, enum: STATUSES, default: 'pending' },
  { store: 'url', type: 'string', ...both('url'), readOnly: true },
  { store: 'account_id', type: 'id', ...both('account_id'), readOnly: true },
  { store: 'expires_at', type: 'datetime', ...both('expires_at'), readOnly: true },
  attrsField,
  ...timestampFields,
];

export const paymentActivations: Family = {
  name: 'payment_activation',
  table: 'payment_activations',
  idPrefix: 'pa',
  types: ['payment_activation'],
  fields,
  objectName: () => 'payment_activation',
  rules: paymentActivationRules,
  triggers: [PAYMENT_ACTIVATION_STATUS_TRIGGER],
};
