/** SQL of per-webhook rate limits: a webhook's limit, and a slot taken from its shared schedule. */
import { rows, type Db } from '../../api/db/connection.ts';

/** The webhook's `rate_limit` (deliveries per second), or null when it has none. */
export async function rateLimitOf(db: Db, webhookId: string): Promise<number | null> {
  const [found] = await rows<{ rate_limit: number | null }>(db, `select (data->>'rate_limit')::int as rate_limit from webhooks where id = ?`, [webhookId]);
  return found?.rate_limit ?? null;
}

/** A slot: when the delivery may go, and the database's clock when it was taken (epoch ms both). */
export interface RateSlot {
  slotMs: number;
  nowMs: number;
}

/**
 * Takes the webhook's next slot: the later of its schedule and now, moving the schedule one
 * interval on. Concurrent takers (any process) queue on the webhook's row, so no two get one slot.
 */
export async function takeRateSlot(db: Db, webhookId: string, perSecond: number): Promise<RateSlot> {
  const [slot] = await rows<RateSlot>(db,
    `insert into webhook_rate_slots as r (webhook_id, next_at) values (?, clock_timestamp() + make_interval(secs => 1.0 / ?))
     on conflict (webhook_id) do update set next_at = greatest(r.next_at, clock_timestamp()) + make_interval(secs => 1.0 / ?)
     returning extract(epoch from r.next_at)::float8 * 1000 - 1000.0 / ? as "slotMs", extract(epoch from clock_timestamp())::float8 * 1000 as "nowMs"`,
    [webhookId, perSecond, perSecond, perSecond]);
  return slot;
}
