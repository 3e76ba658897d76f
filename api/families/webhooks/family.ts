/**
 * Webhooks (spec §2.1, CONTRACT §8): a trigger and a URL, optional OAuth client credentials, a
 * signing secret shown once, a retry budget and a status. The same in both versions.
 */
import type { Family, FieldSpec } from '../../engine/family.ts';
import { attrsField, idField, timestampFields } from '../common.ts';
import { WEBHOOK_STATUS_TRIGGER, WEBHOOK_STATUSES } from './health.ts';
import { webhookRules } from './rules.ts';

let subscribable: readonly string[] | null = null;

/**
 * The triggers a webhook may subscribe to (spec §6, plus `transfer` for the transfer objects of
 * split payments, spec §6 rule 4): each family declares the triggers it fires (`Family.triggers`)
 * and the registry (api/families/index.ts) hands the collected list over with registerTriggers,
 * so this family never imports the registry that lists it.
 */
export function webhookTriggers(): readonly string[] {
  if (!subscribable) throw new Error('Webhook triggers are collected by the family registry: import api/families/index.ts first');
  return subscribable;
}

/** Called by the registry once, with every trigger its families declare. */
export function registerTriggers(triggers: readonly string[]): void {
  subscribable = triggers;
}

const both = (path: string) => ({ v1: path, v2: path });

const fields: FieldSpec[] = [
  idField,
  // Read when a webhook is checked or described, by then the registry has collected the triggers.
  { store: 'trigger', type: 'string', ...both('trigger'), required: true, get enum() { return [...webhookTriggers()]; } },
  { store: 'url', type: 'string', ...both('url'), required: true, maxLength: 2048 },
  { store: 'oauth_params.auth_url', type: 'string', ...both('oauth_params.auth_url'), maxLength: 2048 },
  { store: 'oauth_params.client_id', type: 'string', ...both('oauth_params.client_id'), maxLength: 512 },
  { store: 'oauth_params.client_secret', type: 'string', ...both('oauth_params.client_secret'), maxLength: 1024 },
  { store: 'oauth_params.grant_type', type: 'string', ...both('oauth_params.grant_type'), maxLength: 64 },
  { store: 'oauth_params.resource', type: 'string', ...both('oauth_params.resource'), maxLength: 2048 },
  { store: 'oauth_params.scope', type: 'string', ...both('oauth_params.scope'), maxLength: 1024 },
  { store: 'payment_link_id', type: 'id', ...both('payment_link_id') },
  { store: 'reference_object', type: 'string', ...both('reference_object'), nonDefault: true, maxLength: 64 },
  { store: 'retries', type: 'integer', ...both('retries'), min: 0, max: 20, default: 8 },
  { store: 'sender_secret', type: 'string', ...both('sender_secret'), writeOnly: true, maxLength: 256 },
  // Until then deliveries carry a second signature, under the secret a rotation replaced.
  { store: 'previous_secret_expires_at', type: 'datetime', ...both('previous_secret_expires_at'), readOnly: true },
  { store: 'status', type: 'string', ...both('status'), enum: Object.values(WEBHOOK_STATUSES), default: WEBHOOK_STATUSES.active },
  { store: 'disabled_reason', type: 'string', ...both('disabled_reason'), readOnly: true },
  { store: 'disabled_at', type: 'datetime', ...both('disabled_at'), readOnly: true },
  // Retries have been running out since then (reset by a delivery); WEBHOOK_DISABLE_AFTER of it disables the webhook.
  { store: 'failing_since', type: 'datetime', ...both('failing_since'), readOnly: true },
  // {last_delivered_at, failed_attempts}: the latest success and the failed attempts after it (fields=*,health).
  { store: 'health', type: 'json', ...both('health'), readOnly: true, nonDefault: true },
  { store: 'rate_limit', type: 'integer', ...both('rate_limit'), min: 1, max: 1000 },
  { store: 'logs', type: 'list', ...both('logs'), readOnly: true, nonDefault: true },
  attrsField,
  ...timestampFields,
];

export const webhooks: Family = {
  name: 'webhook',
  table: 'webhooks',
  idPrefix: 'wh',
  types: ['webhook'],
  fields,
  objectName: () => 'webhook',
  rules: webhookRules,
  triggers: [WEBHOOK_STATUS_TRIGGER],
};
