/**
 * A webhook's test event: one event of the webhook's trigger about the webhook itself, marked as a
 * test, and one delivery of it to that webhook alone, enqueued with it in one transaction. The
 * event is never dispatched (api/db/events.ts), so no other webhook receives it, and resends never
 * choose it; the delivery takes the normal path (signed, logged, retried on the webhook's schedule).
 */
import { recordAuditAction, AUDIT_ACTIONS } from '../../db/auditActions.ts';
import { rows, type Db } from '../../db/connection.ts';
import { recordTestEvent, type Trigger } from '../../db/events.ts';
import type { Tenant } from '../../engine/family.ts';
import { conflict, notFound } from '../../errors.ts';
import { deliveriesInsert, enqueueDeliveries } from './deliveryJobs.ts';

export interface TestDelivery {
  id: string;
  event_id: string;
}

export async function sendTestEvent(db: Db, tenant: Tenant, webhookId: string): Promise<TestDelivery> {
  return db.transaction(async (tx) => {
    const [webhook] = await rows<{ trigger: string; status: string }>(tx,
      `select data->>'trigger' as trigger, data->>'status' as status from webhooks where id = ? and org_id = ? and environment = ? for share`,
      [webhookId, tenant.orgId, tenant.environment]);
    if (!webhook) throw notFound(`No webhook with id ${webhookId}`);
    // A delivery to a disabled webhook is cancelled before it is sent: say so rather than send nothing.
    if (webhook.status !== 'active') throw conflict(`Webhook ${webhookId} is ${webhook.status}: enable it to send a test event`);
    // The trigger was checked against the declared ones when the webhook was made.
    const eventId = await recordTestEvent(tx, tenant, {
      trigger: webhook.trigger as Trigger, objectType: 'webhook', objectId: webhookId, value: { test: true },
    });
    const [delivery] = await rows<TestDelivery>(tx,
      deliveriesInsert('(select ?::text as org_id, ?::text as environment, ?::text as webhook_id, ?::text as event_id, 0 as series)', 'pending'),
      [tenant.orgId, tenant.environment, webhookId, eventId]);
    await enqueueDeliveries(tx, [delivery.id], true);
    await recordAuditAction(tx, tenant, AUDIT_ACTIONS.sendTestEvent, 'webhook', webhookId, { event_id: eventId });
    return { id: delivery.id, event_id: eventId };
  });
}
