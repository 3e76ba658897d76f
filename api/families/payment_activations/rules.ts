/** Payment activation rules: checked recipients, the enrollment page, the expiry job, the status event. */
import type { FamilyRules, RuleContext, StoredObject } from '../../engine/family.ts';
import { checkRecipients, hostedPageUrl, LINK_LIFETIME_MS, linkStatusEvents, refuseChanges, scheduleExpiry } from '../intents/links.ts';
import { queueLinkEmails } from '../intents/outbox.ts';
import { LINK_OBJECTS } from '../intents/triggers.ts';

async function prepare(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<StoredObject> {
  if (previous) {
    refuseChanges(next, previous, ['intent', 'send_to']);
    return next;
  }
  const data: Record<string, unknown> = { ...next.data };
  if (data.send_to !== undefined && data.send_to !== null) data.send_to = checkRecipients(data.send_to);
  data.url = hostedPageUrl('enroll', next.id);
  data.expires_at = new Date(ctx.domain.now().getTime() + LINK_LIFETIME_MS).toISOString();
  return { ...next, data };
}

async function afterWrite(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<void> {
  if (previous) return;
  await scheduleExpiry(ctx, 'payment_activations', next);
  await queueLinkEmails(ctx, 'payment_activation', next);
}

export const paymentActivationRules: FamilyRules = { prepare, afterWrite, events: linkStatusEvents(LINK_OBJECTS.payment_activations) };
