/**
 * Pruning `reporting_changes` once its rows are mirrored (the tables: migrations/…_reporting_prune.ts).
 *
 * A change row whose writing transaction is older than a position's xmin is visible in that
 * position, so a mirror that durably recorded the position (in ClickHouse, with the rows) never
 * reads it again, not even after a restart, which resumes from the recorded position. The leader
 * deletes such rows below the lowest durable xmin of every target following the feed, in batches
 * of PRUNE_BATCH rows, each one short statement that skips rows a writer holds. A row changed
 * meanwhile carries its new txid and is not deleted (the delete re-checks the bound); a change
 * made after its row was deleted inserts a new one.
 *
 * Each batch also raises `reporting_pruned.below` in the same statement, which is how a mirror
 * whose recorded position is older than what was pruned finds out (reporting/feed.ts: FeedPruned).
 */
import type { Db } from '../api/db/connection.ts';
import type { Snapshot } from './feed.ts';
import { pruneChangesBelowFollowers, upsertFollower } from './repository.ts';

export const PRUNE_BATCH = 5000;
/** Batches per prune round (a bigger backlog goes on in the next round at once). */
export const PRUNE_BATCHES_PER_ROUND = 8;
/** A target not heard from for this long no longer holds pruning back; if it comes back, it rebuilds. */
export const FOLLOWER_FORGOTTEN_AFTER_MS = 7 * 24 * 3600 * 1000;

/** Declares (or lowers) how far `follower`'s copy is durable, before it reads the feed from there. */
export async function registerFollower(db: Db, follower: string, position: Snapshot): Promise<void> {
  await upsertFollower(db, follower, position.xmin.toString());
}

/** One batch: notes `follower`'s durable position, then deletes up to `limit` change rows every follower has. */
export async function pruneBatch(db: Db, follower: string, durable: Snapshot, limit = PRUNE_BATCH): Promise<number> {
  return pruneChangesBelowFollowers(db, follower, durable.xmin.toString(), FOLLOWER_FORGOTTEN_AFTER_MS, limit);
}

/** Up to `maxBatches` batches; `more` when rows below the bound may remain. */
export async function pruneRound(db: Db, follower: string, durable: Snapshot, maxBatches: number): Promise<{ deleted: number; more: boolean }> {
  let deleted = 0;
  for (let i = 0; i < maxBatches; i += 1) {
    const batch = await pruneBatch(db, follower, durable);
    deleted += batch;
    if (batch < PRUNE_BATCH) return { deleted, more: false };
  }
  return { deleted, more: true };
}
