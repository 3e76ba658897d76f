/**
 * SQL of a webhook's health as its deliveries find it: a failure streak, and disabling. A webhook
 * the worker disables gets its `webhook:status` event in the same transaction (recordEvents, the
 * one event writer), once: only the change from active does it.
 */
import { rows, type Db } from '../../api/db/connection.ts';
import { recordEvents } from '../../api/db/events.ts';
import type { Tenant } from '../../api/engine/family.ts';
import { WEBHOOK_STATUSES, webhookStatusEvent } from '../../api/families/webhooks/health.ts';

/** `disabled_reason` of a webhook whose receiver answered 410. */
export const DISABLED_GONE = 'The receiver answered 410 Gone';

/** `disabled_reason` of a webhook whose retries kept running out for `disableAfterMs`. */
export function disabledFailing(disableAfterMs: number): string {
  const units: Array<[string, number]> = [['day', 86_400_000], ['hour', 3_600_000], ['minute', 60_000], ['second', 1000]];
  const [unit, size] = units.find(([, ms]) => disableAfterMs % ms === 0) ?? ['second', 1000];
  const count = Math.max(1, Math.round(disableAfterMs / size));
  return `Every retry failed for ${count} ${unit}${count === 1 ? '' : 's'} (WEBHOOK_DISABLE_AFTER)`;
}

interface Disabled extends Tenant {
  disabled: boolean;
}

/** The webhook's status, its row locked until the transaction ends (a statement's own CTE cannot read the row it updates). */
async function lockedStatus(tx: Db, webhookId: string): Promise<string | undefined> {
  const [found] = await rows<{ status: string }>(tx, `select data->>'status' as status from webhooks where id = ? for update`, [webhookId]);
  return found?.status;
}

/** Records the event of a webhook this transaction disabled. */
async function announce(tx: Db, webhookId: string, before: string | undefined, found: Disabled | undefined): Promise<boolean> {
  if (before !== WEBHOOK_STATUSES.active || !found?.disabled) return false;
  await recordEvents(tx, { orgId: found.orgId, environment: found.environment }, [webhookStatusEvent(webhookId, WEBHOOK_STATUSES.disabled)]);
  return true;
}

const DISABLED_ROW = `org_id as "orgId", environment, data->>'status' = 'disabled' as disabled`;

/**
 * A schedule exhausted at `at` (the worker's clock): the webhook's failure streak starts (or goes
 * on); past the limit it is disabled. True when this disabled it.
 */
export async function noteExhausted(db: Db, webhookId: string, disableAfterMs: number, at: Date): Promise<boolean> {
  return db.transaction(async (tx) => {
    const before = await lockedStatus(tx, webhookId);
    const [found] = await rows<Disabled>(tx,
      `update webhooks set data = data
          || jsonb_build_object('failing_since', coalesce(data->>'failing_since', to_char(?::timestamptz at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
          || case when data->>'status' = 'active' and coalesce((data->>'failing_since')::timestamptz, ?::timestamptz) <= ?::timestamptz - make_interval(secs => ? / 1000.0)
                  then jsonb_build_object('status', 'disabled', 'disabled_reason', ?::text, 'disabled_at', ?::text) else '{}'::jsonb end,
          modified_at = now()
        where id = ?
        returning ${DISABLED_ROW}`,
      [at.toISOString(), at.toISOString(), at.toISOString(), disableAfterMs, disabledFailing(disableAfterMs), at.toISOString(), webhookId]);
    return announce(tx, webhookId, before, found);
  });
}

/** Disables a webhook (a receiver answered 410 Gone). True when this disabled it. */
export async function disableWebhook(db: Db, webhookId: string, reason: string, at: Date): Promise<boolean> {
  return db.transaction(async (tx) => {
    const before = await lockedStatus(tx, webhookId);
    const [found] = await rows<Disabled>(tx,
      `update webhooks set data = data || case when data->>'status' = 'active'
                then jsonb_build_object('status', 'disabled', 'disabled_reason', ?::text, 'disabled_at', ?::text) else '{}'::jsonb end,
              modified_at = now()
        where id = ?
        returning ${DISABLED_ROW}`,
      [reason, at.toISOString(), webhookId]);
    return announce(tx, webhookId, before, found);
  });
}
