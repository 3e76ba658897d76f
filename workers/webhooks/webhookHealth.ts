/** SQL of a webhook's health as its deliveries find it: a failure streak, and disabling. */
import { rows, type Db } from '../../api/db/connection.ts';

/**
 * A schedule exhausted at `at` (the worker's clock): the webhook's failure streak starts (or goes
 * on); past the limit it is disabled.
 */
export async function noteExhausted(db: Db, webhookId: string, disableAfterMs: number, at: Date): Promise<boolean> {
  const found = await rows<{ disabled: boolean }>(db,
    `update webhooks set data = data
        || jsonb_build_object('failing_since', coalesce(data->>'failing_since', to_char(?::timestamptz at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
        || case when coalesce((data->>'failing_since')::timestamptz, ?::timestamptz) <= ?::timestamptz - make_interval(secs => ? / 1000.0)
                then '{"status": "disabled", "disabled_reason": "failing"}'::jsonb else '{}'::jsonb end,
        modified_at = now()
      where id = ?
      returning data->>'status' = 'disabled' as disabled`,
    [at.toISOString(), at.toISOString(), at.toISOString(), disableAfterMs, webhookId]);
  return found[0]?.disabled ?? false;
}

/** Disables a webhook (a receiver answered 410 Gone). */
export async function disableWebhook(db: Db, webhookId: string, reason: string): Promise<void> {
  await rows(db,
    `update webhooks set data = data || jsonb_build_object('status', 'disabled', 'disabled_reason', ?::text), modified_at = now() where id = ?`,
    [reason, webhookId]);
}
