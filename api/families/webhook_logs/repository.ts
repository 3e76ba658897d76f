/** Webhook log SQL beyond the generic operations: the latest attempts of each webhook. */
import { rows, type Db } from '../../db/connection.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';

export type WebhookLogRow = StoredObject & { webhook_id: string };

/** Up to `perWebhook` logs of each webhook named, newest first (all webhooks' logs in one list). */
export async function latestLogsOfWebhooks(db: Db, tenant: Tenant, webhookIds: string[], perWebhook: number): Promise<WebhookLogRow[]> {
  return rows<WebhookLogRow>(db,
    `select * from (
       select ${STORED_ROW}, webhook_id,
              row_number() over (partition by webhook_id order by created_at desc, id desc) as n
         from webhook_logs where org_id = ? and environment = ? and webhook_id = any(?::text[])) l
      where n <= ? order by created_at desc, id desc`,
    [tenant.orgId, tenant.environment, webhookIds, perWebhook]);
}

/** Failed attempts counted after the latest delivery at most this far back: the console shows "1000+" beyond. */
export const FAILURE_STREAK_COUNTED = 1000;

/**
 * Each webhook's latest delivered attempt and the failed attempts after it (up to
 * FAILURE_STREAK_COUNTED), read newest first along the webhook's log index.
 */
export async function healthOfWebhooks(db: Db, tenant: Tenant, webhookIds: string[]): Promise<Map<string, { last_delivered_at: Date | null; failed_attempts: number }>> {
  const found = await rows<{ webhook_id: string; last_delivered_at: Date | null; failed_attempts: number }>(db,
    `select w.id as webhook_id, d.created_at as last_delivered_at,
            (select count(*)::int from (select 1 from webhook_logs l
               where l.webhook_id = w.id and l.created_at > coalesce(d.created_at, '-infinity') and l.data->>'status' in ('failed', 'unknown')
                 and l.org_id = ? and l.environment = ?
               order by l.created_at desc limit ?) f) as failed_attempts
       from unnest(?::text[]) as w(id)
       left join lateral (select l.created_at from webhook_logs l
                           where l.webhook_id = w.id and l.data->>'status' = 'delivered' and l.org_id = ? and l.environment = ?
                           order by l.created_at desc limit 1) d on true`,
    [tenant.orgId, tenant.environment, FAILURE_STREAK_COUNTED, webhookIds, tenant.orgId, tenant.environment]);
  return new Map(found.map((row) => [row.webhook_id, row]));
}
