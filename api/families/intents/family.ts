/**
 * Intents (CONTRACT §13), both versions: `{type, <type>: {options}, send_to, status, url,
 * client_token, expires_at, attrs}`. Element kinds (spec §2.2) come with a client token for the
 * browser element (shown once, in the create answer); link kinds come with a hosted page `url`
 * that `send_to` recipients are e-mailed. Status: pending → finished (the token spent, or the
 * link completed) or expired (with the token after 30 minutes; links after 7 days).
 */
import type { Family, FieldSpec } from '../../engine/family.ts';
import { attrsField, idField, timestampFields } from '../common.ts';
import { declareIntentFamily } from './declared.ts';
import { ELEMENT_KINDS, LINK_KINDS } from './kinds.ts';
import { STATUSES } from './links.ts';
import { intentRules } from './rules.ts';
import { INTENT_STATUS_TRIGGER } from './triggers.ts';

const KINDS = [...ELEMENT_KINDS, ...LINK_KINDS];

const both = (path: string) => ({ v1: path, v2: path });

const fields: FieldSpec[] = [
  idField,
  { store: 'type', type: 'string', ...both('type'), readOnly: true, enum: KINDS },
  ...KINDS.map((kind): FieldSpec => ({ store: kind, type: 'json', ...both(kind), types: [kind], maxLength: 16 * 1024 })),
  { store: 'send_to', type: 'list', ...both('send_to'), types: [...LINK_KINDS] },
  { store: 'status', type: 'string', ...both('status'), readOnly: true, enum: STATUSES, default: 'pending' },
  { store: 'url', type: 'string', ...both('url'), readOnly: true },
  // Shown in the create answer only: a credential is not stored in clear.
  { store: 'client_token', type: 'string', ...both('client_token'), readOnly: true, types: ELEMENT_KINDS },
  { store: 'account_id', type: 'id', ...both('account_id'), readOnly: true, types: ['payouts_enrollment_link', 'account_enrollment_link', 'processing_account_plugin'] },
  { store: 'expires_at', type: 'datetime', ...both('expires_at'), readOnly: true },
  attrsField,
  ...timestampFields,
];

export const intents: Family = declareIntentFamily({
  name: 'intent',
  table: 'intents',
  idPrefix: 'int',
  types: KINDS,
  fields,
  objectName: () => 'intent',
  rules: intentRules,
  triggers: [INTENT_STATUS_TRIGGER],
});
