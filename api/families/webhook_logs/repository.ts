/** Webhook log SQL beyond the generic operations: the latest attempts of each webhook. */
import { rows, type Db } from '../../db/connection.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';

export type WebhookLogRow = StoredObject & { webhook_id: string };

/** Up to `perWebhook` logs of each webhook named, newest first (all webhooks' logs in one list). */
export async function latestLogsOfWebhooks(db: Db, tenant: Tenant, webhookIds: string[], perWebhook: number): Promise<WebhookLogRow[]> {
  return rows<WebhookLogRow>(db,
    `select * from (
       select ${STORED_ROW}, data->>'webhook_id' as webhook_id,
              row_number() over (partition by data->>'webhook_id' order by created_at desc, id desc) as n
         from webhook_logs where org_id = ? and environment = ? and data->>'webhook_id' = any(?::text[])) l
      where n <= ? order by created_at desc, id desc`,
    [tenant.orgId, tenant.environment, webhookIds, perWebhook]);
}
