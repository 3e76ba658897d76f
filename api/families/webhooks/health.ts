/**
 * A webhook's health as its subscribers hear it (CONTRACT §19): `webhook:status` fires when a
 * webhook is disabled (by a 410, by retries running out, or by request) and when it is enabled
 * again; `triggered_on` is the webhook and `value` its new status. Dispatch never sends it to the
 * webhook it is about.
 */
import { statusEvent, trigger, type EventDraft } from '../../db/events.ts';

export const WEBHOOK_STATUS_TRIGGER = trigger('webhook:status');

export const WEBHOOK_STATUSES = { active: 'active', disabled: 'disabled' } as const;

/** `disabled_reason` of a webhook disabled by request (the worker's reasons are in webhookHealth.ts). */
export const DISABLED_BY_REQUEST = 'Disabled by request (PUT status: disabled)';

export function webhookStatusEvent(webhookId: string, status: string): EventDraft {
  return statusEvent(WEBHOOK_STATUS_TRIGGER, 'webhook', webhookId, status);
}
