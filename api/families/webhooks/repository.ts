/** Webhook SQL beyond the generic operations: its signing secrets. */
import { rows, type Db } from '../../db/connection.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';

/**
 * Replaces a webhook's signing secret. The secret in use becomes the previous one until
 * `previousExpiresAt` (deliveries are signed with both until then); a previous one still in its
 * overlap ends now, so a webhook never has more than two. A null `previousExpiresAt` keeps none.
 * Returns the webhook, or null when the tenant has no such webhook.
 */
export async function rotateSenderSecret(db: Db, tenant: Tenant, webhookId: string, sealed: string, previousExpiresAt: Date | null): Promise<StoredObject | null> {
  const found = await rows<StoredObject>(db,
    `update webhooks set data = data || jsonb_build_object(
              'sender_secret_sealed', ?::text,
              'previous_secret_sealed', case when ?::timestamptz is null then null else data->'sender_secret_sealed' end,
              'previous_secret_expires_at', ?::text),
            modified_at = now()
      where id = ? and org_id = ? and environment = ?
     returning ${STORED_ROW}`,
    [sealed, previousExpiresAt?.toISOString() ?? null, previousExpiresAt?.toISOString() ?? null, webhookId, tenant.orgId, tenant.environment]);
  return found[0] ?? null;
}
