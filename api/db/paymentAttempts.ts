/**
 * SQL of the card-testing limit (api/http/rateLimit.ts): per name (a client address, a payment
 * link), the times of the attempts of the last minute that were declined or are still waiting
 * for the processor, in one table every web process shares.
 *
 * A claim is one upsert over all of an attempt's names. `on conflict do update` locks each row
 * and judges its condition on the row's newest version, so concurrent claims from any process
 * queue on the row and never count past the limit; rows are taken in one order (scope, key), so
 * two claims never wait on each other crosswise. An attempt under several names claims them all
 * in one transaction, or none.
 */
import { rows, type Db } from './connection.ts';

export interface AttemptName {
  scope: string;
  key: string;
}

export const ATTEMPT_WINDOW_MS = 60_000;

/** Claims one attempt at `at` (ms) under every name: null when claimed, else when (ms) every full name has room again (then nothing is claimed). */
export async function claimAttempt(db: Db, names: AttemptName[], at: number, limit: number): Promise<number | null> {
  const claim = async (tx: Db) => {
    const claimed = await rows(tx,
      `insert into payment_attempt_limits as l (scope, key, attempts, latest)
       select scope, key, array[?::bigint], ?::bigint from unnest(?::text[], ?::text[]) as n(scope, key) order by scope, key
       on conflict (scope, key) do update
          set attempts = array(select a from unnest(l.attempts) a where a > ?::bigint) || ?::bigint,
              latest = greatest(l.latest, ?::bigint)
        where (select count(*) from unnest(l.attempts) a where a > ?::bigint) < ?
       returning 1`,
      [at, at, names.map((n) => n.scope), names.map((n) => n.key), at - ATTEMPT_WINDOW_MS, at, at, at - ATTEMPT_WINDOW_MS, limit]);
    return claimed.length === names.length;
  };
  // A full name has room again once its limit-th newest attempt leaves the minute.
  const roomAt = async (tx: Db) => {
    const [row] = await rows<{ at: string | null }>(tx,
      `select max((array(select a from unnest(l.attempts) a where a > ?::bigint order by a desc))[?]) + ? as at
         from payment_attempt_limits l join unnest(?::text[], ?::text[]) as n(scope, key) using (scope, key)`,
      [at - ATTEMPT_WINDOW_MS, limit, ATTEMPT_WINDOW_MS, names.map((n) => n.scope), names.map((n) => n.key)]);
    // Nothing full any more (the attempts holding it were given back meanwhile): at once.
    return row?.at == null ? at : Number(row.at);
  };
  // One name: the statement alone is atomic.
  if (names.length === 1) return (await claim(db)) ? null : roomAt(db);
  const tx = await db.transaction();
  try {
    const retryAt = (await claim(tx)) ? null : await roomAt(tx);
    if (retryAt === null) await tx.commit();
    else await tx.rollback();
    return retryAt;
  } catch (error) {
    await tx.rollback().catch(() => {});
    throw error;
  }
}

/** Gives back the attempt claimed at `at` under every name (it was not declined). */
export async function releaseAttempt(db: Db, names: AttemptName[], at: number): Promise<void> {
  await db.raw(
    `update payment_attempt_limits l
        set attempts = l.attempts[:array_position(l.attempts, ?::bigint) - 1] || l.attempts[array_position(l.attempts, ?::bigint) + 1:]
       from unnest(?::text[], ?::text[]) as n(scope, key)
      where (l.scope, l.key) = (n.scope, n.key) and ?::bigint = any(l.attempts)`,
    [at, at, names.map((n) => n.scope), names.map((n) => n.key), at]);
}

/** Deletes the rows with no attempt within the minute before `at`. */
export async function deleteIdleAttemptRows(db: Db, at: number): Promise<void> {
  await db.raw('delete from payment_attempt_limits where latest <= ?::bigint', [at - ATTEMPT_WINDOW_MS]);
}
