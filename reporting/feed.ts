/**
 * Reading transaction changes out of Postgres for the mirror, behind a snapshot guard.
 *
 * A pass runs in one REPEATABLE READ snapshot. Its `xmin` is the oldest transaction still running,
 * so every change written by a transaction with txid < xmin is final and visible in the snapshot;
 * the pass copies the changes whose txid lies in [position, xmin) and the new position is xmin.
 * A transaction that commits late has txid >= the xmin of every pass that ran before it finished,
 * so it lands in a later window, never behind the position. Rows are read as ClickHouse
 * JSONEachRow text built by Postgres, through a cursor, in chunks.
 */
import type { Knex } from 'knex';
import { rows, type Db } from '../api/db/connection.ts';
import { pgRowJson } from './columns.ts';

export interface FeedChunk {
  lines: string[];
  /** epoch ms of the oldest change in the chunk, for lag */
  oldestChangeMs: number;
}

export interface FeedWindow {
  from: bigint;
  to: bigint;
  /** transactions were still running at the snapshot, so a later pass will find more */
  inFlight: boolean;
  rows: number;
}

/** Rows per fetch and per ClickHouse insert: large, since each insert writes a part per month it touches. */
const CHUNK_ROWS = 100_000;

interface SnapshotBounds {
  xmin: string;
  xmax: string;
}

async function snapshotBounds(trx: Knex.Transaction): Promise<SnapshotBounds> {
  const [bounds] = await rows<SnapshotBounds>(trx, 'select pg_snapshot_xmin(s)::text as xmin, pg_snapshot_xmax(s)::text as xmax from pg_current_snapshot() s');
  return bounds;
}

/**
 * Copies the changes of the window starting at `from` to `sink`, chunk by chunk; `sink` runs while
 * the next chunk is fetched. `from === null` is a full copy of the current rows (a rebuild).
 */
export async function readChanges(db: Db, from: bigint | null, sink: (chunk: FeedChunk) => Promise<void>, onTotal?: (total: number) => void): Promise<FeedWindow> {
  return db.transaction(async (trx) => {
    const bounds = await snapshotBounds(trx);
    const to = BigInt(bounds.xmin);
    const window: FeedWindow = { from: from ?? 0n, to, inFlight: bounds.xmin !== bounds.xmax, rows: 0 };
    if (from !== null && to <= from) return { ...window, to: from };
    const where = from === null ? 'not c.deleted' : 'c.txid >= ?::xid8 and c.txid < ?::xid8';
    const bindings = from === null ? [] : [from.toString(), to.toString()];
    if (onTotal) {
      const [{ total }] = await rows<{ total: number }>(trx, `select count(*)::bigint as total from reporting_changes c where ${where}`, bindings);
      onTotal(Number(total));
    }
    await trx.raw(`declare mirror_feed no scroll cursor for
      select ${pgRowJson()} as line, extract(epoch from c.changed_at) * 1000 as changed_ms
        from reporting_changes c left join transactions t on t.id = c.transaction_id
       where ${where}`, bindings);
    let pending: Promise<void> = Promise.resolve();
    for (;;) {
      const fetched = await rows<{ line: string; changed_ms: string }>(trx, `fetch forward ${CHUNK_ROWS} from mirror_feed`);
      await pending;
      if (fetched.length === 0) break;
      window.rows += fetched.length;
      let oldest = Infinity;
      for (const row of fetched) oldest = Math.min(oldest, Number(row.changed_ms));
      pending = sink({ lines: fetched.map((row) => row.line), oldestChangeMs: oldest });
      // Awaited after the next fetch; until then a failure must not count as unhandled.
      pending.catch(() => {});
    }
    await pending;
    return window;
  }, { isolationLevel: 'repeatable read', readOnly: true });
}
