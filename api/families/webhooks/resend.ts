/** Resending a webhook's events: a new attempt series per chosen event, enqueued with it. */
import { rows, type Db } from '../../db/connection.ts';
import { enqueueDeliveries } from './deliveryJobs.ts';

export interface ResendFilter {
  eventId?: string;
  since?: Date;
  until?: Date;
}

/** Resend: a new attempt series for each chosen event of this webhook's trigger (10,000 at most). */
export async function resendEvents(db: Db, tenant: { orgId: string; environment: string }, webhookId: string, filter: ResendFilter): Promise<Array<{ id: string; event_id: string; series: number }>> {
  return db.transaction(async (tx) => {
    const created = await rows<{ id: string; event_id: string; series: number }>(tx,
      `insert into webhook_deliveries (id, org_id, environment, webhook_id, event_id, series, next_attempt_at)
       select 'whd_' || substr(md5(w.id || e.id || s.series::text), 1, 24), e.org_id, e.environment, w.id, e.id, s.series, now()
         from webhooks w
         join events e on e.org_id = w.org_id and e.environment = w.environment and e.trigger = w.data->>'trigger'
         cross join lateral (select coalesce(max(series) + 1, 0) as series from webhook_deliveries d where d.webhook_id = w.id and d.event_id = e.id) s
        where w.id = ? and w.org_id = ? and w.environment = ?
          and (?::text is null or e.id = ?) and (?::timestamptz is null or e.created_at >= ?) and (?::timestamptz is null or e.created_at <= ?)
        order by e.seq
        limit 10000
       returning id, event_id, series`,
      [webhookId, tenant.orgId, tenant.environment, filter.eventId ?? null, filter.eventId ?? null, filter.since ?? null, filter.since ?? null, filter.until ?? null, filter.until ?? null]);
    await enqueueDeliveries(tx, created.map((d) => d.id));
    return created;
  });
}
