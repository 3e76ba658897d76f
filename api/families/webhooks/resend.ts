/**
 * Resending a webhook's events: a new attempt series per chosen event, enqueued with it in one
 * transaction, in the order the events were written (so the jobs are taken in that order).
 * A window with `onlyMissed` chooses the events recorded against the webhook (dispatched to it,
 * skipped while it was disabled, failed or cancelled) of which no series was delivered and none
 * is still under way: run again, it finds nothing left. A test event (testEvent.ts) is never chosen:
 * it was for one webhook's receiver, once.
 */
import { rows, type Db } from '../../db/connection.ts';
import type { Tenant } from '../../engine/family.ts';
import { invalidAttributes } from '../../errors.ts';
import { deliveriesInsert, enqueueDeliveries } from './deliveryJobs.ts';

export interface ResendFilter {
  eventId?: string;
  since?: Date;
  until?: Date;
  onlyMissed?: boolean;
}

/** The most events one resend takes: a longer window is refused (a 400), never cut short. */
export const RESEND_MAX_EVENTS = 200_000;

/** The chosen events of the webhook's trigger, oldest first (RESEND_MAX_EVENTS + 1 at most, to tell a window too large). */
async function chooseEvents(tx: Db, tenant: Tenant, webhookId: string, filter: ResendFilter): Promise<string[]> {
  const found = await rows<{ id: string }>(tx,
    `select e.id from webhooks w
       join events e on e.org_id = w.org_id and e.environment = w.environment and e.trigger = w.data->>'trigger' and e.object_id <> w.id and not e.test
      where w.id = ? and w.org_id = ? and w.environment = ?
        -- the tenant index's key: the window is a range of it by created_at
        and tenant_key(e.org_id, e.environment) = tenant_key(w.org_id, w.environment)
        and (?::text is null or e.id = ?) and (?::timestamptz is null or e.created_at >= ?) and (?::timestamptz is null or e.created_at <= ?)
        and (not ?::boolean or (exists (select 1 from webhook_deliveries d where d.webhook_id = w.id and d.event_id = e.id)
                                and not exists (select 1 from webhook_deliveries d where d.webhook_id = w.id and d.event_id = e.id and d.state in ('delivered', 'pending'))))
      order by e.seq
      limit ?`,
    [webhookId, tenant.orgId, tenant.environment, filter.eventId ?? null, filter.eventId ?? null, filter.since ?? null, filter.since ?? null,
      filter.until ?? null, filter.until ?? null, filter.onlyMissed ?? false, RESEND_MAX_EVENTS + 1]);
  return found.map((row) => row.id);
}

export async function resendEvents(db: Db, tenant: Tenant, webhookId: string, filter: ResendFilter): Promise<Array<{ id: string; event_id: string; series: number }>> {
  return db.transaction(async (tx) => {
    // Concurrent resends of one webhook take turns, so two only_missed runs never both take an event.
    await rows(tx, 'select 1 from webhooks where id = ? and org_id = ? and environment = ? for update', [webhookId, tenant.orgId, tenant.environment]);
    const eventIds = await chooseEvents(tx, tenant, webhookId, filter);
    if (eventIds.length > RESEND_MAX_EVENTS) {
      throw invalidAttributes({ until: `More than ${RESEND_MAX_EVENTS} events in the window: resend a narrower one` });
    }
    // Each chosen event's next series, in the order chosen (its jobs are taken in that order).
    const next = `(select ?::text as org_id, ?::text as environment, ?::text as webhook_id, c.event_id, s.series
                     from unnest(?::text[]) with ordinality as c(event_id, n)
                     cross join lateral (select coalesce(max(series) + 1, 0) as series from webhook_deliveries d where d.webhook_id = ? and d.event_id = c.event_id) s
                    order by c.n)`;
    const created = await rows<{ id: string; event_id: string; series: number }>(tx, deliveriesInsert(next, 'pending'),
      [tenant.orgId, tenant.environment, webhookId, eventIds, webhookId]);
    await enqueueDeliveries(tx, created.map((d) => d.id));
    return created;
  });
}
