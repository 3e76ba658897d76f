/** Webhook logs: one row per delivery attempt, written by the worker, read through the API. */
import type { Family, FieldSpec } from '../../engine/family.ts';
import { idField, timestampFields } from '../common.ts';

const both = (path: string) => ({ v1: path, v2: path, readOnly: true });

/**
 * What became of an attempt. A log is written as the request goes out (`in_flight`) and completed
 * with its answer: `delivered` (a 2xx) or `failed` (any other answer, or none: refused, timed out).
 * An attempt whose sender stopped before recording the answer (a worker killed, the database gone)
 * is `unknown` once the delivery is tried again or cancelled: the receiver may have got it. An
 * event a disabled webhook would have received is logged `skipped`, with no attempt (`attempt` 0):
 * `POST /webhooks/{id}/resend {only_missed: true}` delivers it later.
 */
export const WEBHOOK_LOG_STATUSES = { inFlight: 'in_flight', unknown: 'unknown', delivered: 'delivered', failed: 'failed', skipped: 'skipped' } as const;
export type WebhookLogStatus = (typeof WEBHOOK_LOG_STATUSES)[keyof typeof WEBHOOK_LOG_STATUSES];

const fields: FieldSpec[] = [
  idField,
  { store: 'webhook_id', column: 'webhook_id', type: 'id', ...both('webhook_id') },
  { store: 'event_id', type: 'id', ...both('event_id') },
  { store: 'trigger', type: 'string', ...both('trigger') },
  { store: 'triggered_on', type: 'json', ...both('triggered_on') },
  { store: 'url', type: 'string', ...both('url') },
  { store: 'http_status', type: 'integer', ...both('http_status') },
  { store: 'oauth_status', type: 'integer', ...both('oauth_status') },
  { store: 'attempt', type: 'integer', ...both('attempt') },
  { store: 'status', type: 'string', ...both('status'), enum: Object.values(WEBHOOK_LOG_STATUSES) },
  { store: 'duration_ms', type: 'integer', ...both('duration_ms') },
  { store: 'response', type: 'string', ...both('response') },
  { store: 'error', type: 'string', ...both('error') },
  { store: 'next_attempt_at', type: 'datetime', ...both('next_attempt_at') },
  ...timestampFields,
];

export const webhookLogs: Family = {
  name: 'webhook_log',
  table: 'webhook_logs',
  idPrefix: 'whl',
  types: ['webhook_log'],
  fields,
  objectName: () => 'webhook_log',
};
