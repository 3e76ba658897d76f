/**
 * Reading transaction changes out of Postgres for the mirror, guarded by snapshots.
 *
 * The position of the mirror is a Postgres snapshot (`xmin:xmax:xip`): every change visible in it
 * has been copied. A pass opens a new REPEATABLE READ snapshot and copies the changes whose
 * writing transaction was not visible in the previous one: txid ≥ the previous xmax, or in the
 * previous in-progress list. A transaction that commits late was in progress (or not yet started)
 * at every earlier snapshot, so its changes are picked up by the first pass that sees them; none
 * is skipped, and an old transaction still open elsewhere holds nothing back.
 *
 * Rows are read as ClickHouse feed lines built by Postgres (reporting/columns.ts), through a
 * cursor, in chunks; the next chunk is fetched while the previous one is inserted.
 */
import type { Knex } from 'knex';
import { rows, type Db } from '../api/db/connection.ts';
import { pgRowJson } from './columns.ts';

export interface Snapshot {
  xmin: bigint;
  xmax: bigint;
  /** transactions in progress at the snapshot, all in [xmin, xmax) */
  xip: bigint[];
}

export const EMPTY_SNAPSHOT: Snapshot = { xmin: 0n, xmax: 0n, xip: [] };

const SNAPSHOT_TEXT = /^(\d{1,20}):(\d{1,20}):((?:\d{1,20})(?:,\d{1,20})*)?$/;

/** `pg_snapshot` text form (`10:20:10,14`). */
export function parseSnapshot(text: string): Snapshot | null {
  const match = SNAPSHOT_TEXT.exec(text);
  if (!match) return null;
  return { xmin: BigInt(match[1]), xmax: BigInt(match[2]), xip: match[3] ? match[3].split(',').map(BigInt) : [] };
}

export function formatSnapshot(snapshot: Snapshot): string {
  return `${snapshot.xmin}:${snapshot.xmax}:${snapshot.xip.join(',')}`;
}

/**
 * Whether everything committed before `target` was taken is visible in `mirrored`: nothing that
 * had finished by `target` may still be in progress at `mirrored`, and `mirrored` must not be older.
 */
export function covers(mirrored: Snapshot, target: Snapshot): boolean {
  if (mirrored.xmax < target.xmax) return false;
  const openAtTarget = new Set(target.xip);
  return mirrored.xip.every((txid) => txid >= target.xmax || openAtTarget.has(txid));
}

export interface FeedChunk {
  lines: string[];
  /** epoch ms of the oldest change in the chunk, for lag */
  oldestChangeMs: number;
}

export interface FeedPass {
  /** the snapshot the pass read in: its new position */
  snapshot: Snapshot;
  rows: number;
}

const CHUNK_ROWS = 100_000;

/**
 * Copies to `sink` the changes made visible since `since` (every current row when `since` is null:
 * a rebuild), chunk by chunk. `sink` runs while the next chunk is fetched.
 */
export async function readChanges(db: Db, since: Snapshot | null, sink: (chunk: FeedChunk) => Promise<void>, onTotal?: (total: number) => void): Promise<FeedPass> {
  return db.transaction(async (trx) => {
    const [{ snapshot: text }] = await rows<{ snapshot: string }>(trx, 'select pg_current_snapshot()::text as snapshot');
    const snapshot = parseSnapshot(text)!;
    const pass: FeedPass = { snapshot, rows: 0 };
    if (since && formatSnapshot(since) === text) return pass;
    const [where, bindings] = since === null
      ? ['not c.deleted', []]
      : ['(c.txid >= ?::xid8 or c.txid = any(?::xid8[]))', [since.xmax.toString(), since.xip.map(String)]];
    if (onTotal) {
      const [{ total }] = await rows<{ total: number }>(trx, `select count(*)::bigint as total from reporting_changes c where ${where}`, bindings);
      onTotal(Number(total));
    }
    await trx.raw(`declare mirror_feed no scroll cursor for
      select ${pgRowJson()} as line, extract(epoch from c.changed_at) * 1000 as changed_ms
        from reporting_changes c left join transactions t on t.id = c.transaction_id
       where ${where}`, bindings);
    await copyCursor(trx, pass, sink);
    return pass;
  }, { isolationLevel: 'repeatable read', readOnly: true });
}

async function copyCursor(trx: Knex.Transaction, pass: FeedPass, sink: (chunk: FeedChunk) => Promise<void>): Promise<void> {
  let pending: Promise<void> = Promise.resolve();
  for (;;) {
    const fetched = await rows<{ line: string; changed_ms: string }>(trx, `fetch forward ${CHUNK_ROWS} from mirror_feed`);
    await pending;
    if (fetched.length === 0) break;
    pass.rows += fetched.length;
    let oldest = Infinity;
    for (const row of fetched) oldest = Math.min(oldest, Number(row.changed_ms));
    pending = sink({ lines: fetched.map((row) => row.line), oldestChangeMs: oldest });
    // Awaited after the next fetch; until then a failure must not count as unhandled.
    pending.catch(() => {});
  }
  await pending;
}
