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
import { rows, type Db } from '../api/db/connection.ts';
import { FEED_SESSION, pgRowJson, type FeedShape } from './columns.ts';

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
  /** what the lines carry (reporting/columns.ts): a rebuild's the document, a pass's the derived values */
  shape: FeedShape;
  /** epoch ms of the oldest change in the chunk, for lag */
  oldestChangeMs: number;
  /** the (tenant, UTC day of created_at) of the chunk's changes, each once, and what the rollup must do for them (none in a rebuild) */
  days: ChangedDay[];
}

/**
 * A day changed by a pass. `fresh`: the ids of its changed transactions when every one of them was
 * inserted after the rollup's position (the rollup adds them to the day's groups); null when any
 * may have been counted already (the day is aggregated again).
 */
export interface ChangedDay extends Bucket {
  fresh: FreshRows | null;
}

/** Transactions new to the rollup: their ids, and the range of their `created_at` (UTC text, as the feed gives it). */
export interface FreshRows {
  ids: string[];
  from: string;
  to: string;
}

/** A tenant's day: where a change falls in the rollup (reporting/columns.ts). */
export interface Bucket {
  orgId: string;
  environment: string;
  /** YYYY-MM-DD, UTC */
  day: string;
}

export interface FeedPass {
  /** the snapshot the pass read in: its new position */
  snapshot: Snapshot;
  /** epoch ms when Postgres had taken that snapshot */
  snapshotAt: number;
  rows: number;
}

export const CHUNK_ROWS = 100_000;

/**
 * Change rows older than a position may be pruned (reporting/prune.ts); a mirror whose position
 * is older than what was pruned cannot follow on from it and must rebuild.
 */
export class FeedPruned extends Error {
  override name = 'FeedPruned';

  constructor(position: Snapshot, prunedBelow: bigint) {
    super(`changes this mirror still needs were pruned (position ${formatSnapshot(position)}, pruned below ${prunedBelow})`);
  }
}

/** The change feed since a position. */
const CHANGES_SINCE = `from reporting_changes c left join transactions t on t.id = c.transaction_id
       where (c.txid >= ?::xid8 or c.txid = any(?::xid8[]))`;
/**
 * A rebuild reads `transactions` itself, every row at version 0: below any version a later change
 * takes, and each transaction comes once. Change rows are pruned once mirrored, so joining them
 * would give a version to the rows changed since the last prune only; on a first catch-up (none
 * pruned yet) the join cost 0.5–0.9 CPU s of 1M rows before Postgres sent the first one.
 */
const EVERY_TRANSACTION = `from transactions t left join rebuild_tenants r on r.org_id = t.org_id and r.environment = t.environment
       cross join lateral (select t.org_id, t.environment, t.id as transaction_id, t.created_at, false as deleted,
                                  0::bigint as version, t.modified_at as changed_at) c`;

/**
 * The tenants numbered in the mirror's byte order, found one index probe each (a skip scan of the
 * tenant index): the rebuild sorts by a number and a time rather than by two texts.
 */
const REBUILD_TENANTS = `with recursive tenants as (
    (select t.org_id, t.environment from transactions t order by tenant_key(t.org_id, t.environment) limit 1)
    union all
    select n.org_id, n.environment from tenants p cross join lateral (
      select t.org_id, t.environment from transactions t
       where tenant_key(t.org_id, t.environment) > tenant_key(p.org_id, p.environment)
       order by tenant_key(t.org_id, t.environment) limit 1) n),
  rebuild_tenants as (
    select org_id, environment, row_number() over (order by org_id collate "C", environment collate "C") as rank from tenants)
`;

/**
 * A rebuild reads the transactions in the mirror's sort order, so each chunk ClickHouse writes is a
 * part of its own key range: FINAL reads such parts without merging them, so the copy goes live
 * unmerged. A 1M-row rebuild took 8.4–8.7 CPU s in the reporting process so, against 12.2–14.4 in
 * id order with an OPTIMIZE FINAL before going live. Postgres sorts before it sends the first row;
 * by the tenant's number it spent 1.6–2.0 CPU s there (1M rows), by the two texts 2.9 (a collation
 * such as C.UTF-8 compares texts through the locale). A tenant missing from the numbering (none
 * can be: it is taken in the same snapshot) would sort last, not be lost.
 */
const REBUILD_ORDER = '\n       order by r.rank, t.created_at, t.id collate "C"';

/**
 * Compiling the feed's expressions (JIT) took 0.3 s of a 1M-row rebuild before its first row and
 * saved nothing after it. Off for the rebuild's transaction only.
 */
const REBUILD_PLAN = ", set_config('jit', 'off', true)";

/**
 * A pass reads the feed's tail by its txid index and joins each row by primary key. The statistics
 * of a queue-like table are stale by nature (a growing txid, a feed just pruned): guessing hundreds
 * of thousands of rows, the planner would scan the feed and hash-join every transaction (or start
 * parallel workers for it), seconds a pass where the tail takes milliseconds. Set for the pass's
 * transaction only, in the statement that takes its snapshot (no round trip of their own).
 */
const TAIL_PLAN = `, set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true),
  set_config('enable_mergejoin', 'off', true), set_config('max_parallel_workers_per_gather', '0', true)`;

export interface ReadOptions {
  /** called with the number of rows before the first chunk */
  onTotal?: (total: number) => void;
  /** the rollup's position, for each change's `fresh` (ChangedDay); by default `since` */
  rolledUp?: Snapshot | null;
}

/**
 * Copies to `sink` the changes made visible since `since` (every current row when `since` is null:
 * a rebuild), chunk by chunk. `sink` runs while the next chunk is fetched. Throws FeedPruned when
 * changes after `since` may have been pruned.
 */
export async function readChanges(db: Db, since: Snapshot | null, sink: (chunk: FeedChunk) => Promise<void>, options: ReadOptions = {}): Promise<FeedPass> {
  const { onTotal } = options;
  const rolledUp = options.rolledUp ?? since;
  return db.transaction(async (trx) => {
    const [{ snapshot: text, pruned_below: prunedBelow }] = await rows<{ snapshot: string; pruned_below: string | null }>(trx,
      `select pg_current_snapshot()::text as snapshot, (select below::text from reporting_pruned) as pruned_below, ${FEED_SESSION}${since === null ? REBUILD_PLAN : TAIL_PLAN}`);
    const snapshot = parseSnapshot(text)!;
    const pass: FeedPass = { snapshot, snapshotAt: Date.now(), rows: 0 };
    if (since && prunedBelow !== null && BigInt(prunedBelow) > since.xmin) throw new FeedPruned(since, BigInt(prunedBelow));
    if (since && formatSnapshot(since) === text) return pass;
    const [from, bindings] = since === null ? [EVERY_TRANSACTION, []] : [CHANGES_SINCE, [since.xmax.toString(), since.xip.map(String)]];
    if (onTotal) {
      const counted = since === null ? 'from transactions' : from;
      const [{ total }] = await rows<{ total: number }>(trx, `select count(*)::bigint as total ${counted}`, bindings);
      onTotal(Number(total));
    }
    // The day as the mirror's DateTime64 holds it: within 1900–2299.
    const utcDay = `greatest(least((c.created_at at time zone 'UTC')::date, date '2299-12-31'), date '1900-01-01')::text`;
    // Inserted by a transaction the rollup's position does not see: the rollup cannot have counted it.
    // Within the mirror's DateTime64 range only: the rollup finds such rows by their time.
    const fresh = rolledUp ? `c.inserted_txid is not null and (c.inserted_txid >= ?::xid8 or c.inserted_txid = any(?::xid8[]))
      and c.created_at >= timestamptz '1900-01-01 00:00:00+00' and c.created_at < timestamptz '2300-01-01 00:00:00+00'` : 'false';
    const changes = `, extract(epoch from c.changed_at) * 1000 as changed_ms, c.transaction_id as id, ${fresh} as fresh,
      (c.created_at at time zone 'UTC')::text as created,
      to_json(c.org_id)::text || ',' || to_json(c.environment)::text || ',"' || ${utcDay} || '"' as day`;
    const freshBindings = rolledUp ? [rolledUp.xmax.toString(), rolledUp.xip.map(String)] : [];
    // A rebuild copies rows as they stand, not changes: no commit time to measure lag from, and
    // the rollup is built whole afterwards, so no days to recompute. Its lines alone: two constant
    // columns beside them cost Postgres 0.75 CPU s of 1M rows, 0.35 of it before the first row.
    // A rebuild sends the document (Postgres's cost a row is what bounds it), a pass the derived
    // values (ClickHouse's cost an insert is what bounds the lag).
    const shape: FeedShape = since === null ? 'data' : 'derived';
    await trx.raw(`declare mirror_feed no scroll cursor for
      ${since === null ? REBUILD_TENANTS : ''}select ${pgRowJson(shape)} as line${since === null ? '' : changes}
        ${from}${since === null ? REBUILD_ORDER : ''}`, since === null ? bindings : [...freshBindings, ...bindings]);
    await copyCursor(trx, pass, shape, sink);
    return pass;
  }, { isolationLevel: 'repeatable read', readOnly: true });
}

async function copyCursor(trx: Db, pass: FeedPass, shape: FeedShape, sink: (chunk: FeedChunk) => Promise<void>): Promise<void> {
  let pending: Promise<void> = Promise.resolve();
  for (;;) {
    // A rebuild's rows have a line only: no change time (oldest 0), no days.
    const fetched = await rows<{ line: string; changed_ms?: string; id?: string; fresh?: boolean; created?: string; day?: string | null }>(trx, `fetch forward ${CHUNK_ROWS} from mirror_feed`);
    await pending;
    if (fetched.length === 0) break;
    const last = fetched.length < CHUNK_ROWS;
    pass.rows += fetched.length;
    let oldest = Infinity;
    const days = new Map<string, FreshRows | null>();
    for (const row of fetched) {
      oldest = Math.min(oldest, Number(row.changed_ms ?? 0));
      if (!row.day) continue;
      const fresh = days.has(row.day) ? days.get(row.day)! : { ids: [], from: row.created!, to: row.created! };
      if (!fresh || !row.fresh) {
        days.set(row.day, null);
        continue;
      }
      fresh.ids.push(row.id!);
      if (row.created! < fresh.from) fresh.from = row.created!;
      if (row.created! > fresh.to) fresh.to = row.created!;
      days.set(row.day, fresh);
    }
    const buckets = [...days].map(([text, fresh]) => {
      const [orgId, environment, day] = JSON.parse(`[${text}]`) as [string, string, string];
      return { orgId, environment, day, fresh };
    });
    pending = sink({ lines: fetched.map((row) => row.line), shape, oldestChangeMs: oldest, days: buckets });
    // Awaited after the next fetch; until then a failure must not count as unhandled.
    pending.catch(() => {});
    // A short chunk is the cursor's end: no round trip to hear so.
    if (last) break;
  }
  await pending;
}
