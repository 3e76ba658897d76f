/**
 * The mirror loop (leader only): passes run back to back (REPORTING_BATCH_INTERVAL apart, further
 * when passes slow) while changes keep coming, every REPORTING_POLL_INTERVAL while idle (backing
 * off to it from the batch interval), and at once when a query waits for a position. Commits do
 * not NOTIFY (that serialises commits; migrations/20261123000012). Each pass copies the changes
 * that became visible since the last one (reporting/feed.ts) into ClickHouse.
 *
 * The rollup (reporting/columns.ts) follows the mirror by days: a pass notes in the store the days
 * its changes fall on, and they are refreshed together ROLLUP_REFRESH_MS after the last refresh
 * (while changes flow, ROLLUP_REFRESH_SPACING times its own duration when that is longer), or when
 * a caller waits for the rollup itself, so a pass's lag is its copy alone, and under load one
 * refresh serves many passes. A refresh runs beside the passes, on a ClickHouse connection of its
 * own (ReportingStore), with the position's record after it: no pass waits for either. A refresh
 * adds the transactions inserted since the rollup's position to their groups (a cost of what
 * changed) and aggregates again only the days where a transaction it may have counted changed
 * (ReportingStore.refreshRollup). Until then a query that reads the rollup aggregates its
 * tenant's changed days from the mirror (rollupWithDaysSql): a reader waits for the copy only.
 * The position recorded in ClickHouse, next to the data, is the rollup's (every change it covers
 * is in both tables), at most every BUSY_RECORD_MS while changes flow: a restart resumes from
 * there, copies the changes after it again (the same versions, which the ReplacingMergeTree
 * collapses) and notes their days, so nothing is skipped.
 *
 * Once a position is recorded, the change rows it covers are pruned (reporting/prune.ts) by a loop
 * of its own, every REPORTING_PRUNE_INTERVAL and back to back while a backlog lasts, on its own
 * connection beside the passes: a pass never waits for a prune, nor a prune for a pass (a prune
 * only deletes rows every recorded position already covers). A mirror that finds changes it still
 * needed pruned (its ClickHouse restored from an old backup, or a target left behind) rebuilds
 * instead of skipping them.
 */
import type { Logger } from 'pino';
import type { Db } from '../api/db/connection.ts';
import { rollupTable } from './columns.ts';
import { FailureLog } from './failures.ts';
import { covers, EMPTY_SNAPSHOT, FeedPruned, formatSnapshot, readChanges, type FeedChunk, type FeedPass, type Snapshot } from './feed.ts';
import { PRUNE_BATCHES_PER_ROUND, pruneRound, registerFollower } from './prune.ts';
import type { ReportingStore } from './store.ts';

export interface MirrorOptions {
  pollIntervalMs: number;
  batchIntervalMs: number;
  /** ms between prunes of mirrored change rows (REPORTING_PRUNE_INTERVAL). Default 10000. */
  pruneIntervalMs?: number;
  /** while changes flow, ms the rollup may trail the mirror when no reader waits for it. Default ROLLUP_REFRESH_MS. */
  rollupRefreshMs?: number;
}

const DEFAULT_PRUNE_INTERVAL_MS = 10_000;

export interface MirrorStatus {
  /** everything visible in this Postgres snapshot is in ClickHouse */
  position: Snapshot;
  /** ms from a change's commit to its rows being in ClickHouse, worst of the last pass that copied rows */
  lagMs: number;
  lastPassAt: number;
  rowsMirrored: number;
  /** where the time of the last pass that copied rows went, for whoever measures the lag's parts */
  lastCopy: PassTimeline | null;
}

/** Epoch ms of a pass's steps: it started, Postgres took its snapshot, its rows were read, then inserted into ClickHouse. */
export interface PassTimeline {
  startedAt: number;
  snapshotAt: number;
  readAt: number;
  insertedAt: number;
  rows: number;
}

export interface RebuildProgress {
  done: number;
  total: number;
  /** when finished: ms copying rows, ms merging them into one part, ms building the rollup from them */
  copyMs?: number;
  mergeMs?: number;
  rollupMs?: number;
}

function logProgress(log: Logger): (p: RebuildProgress) => void {
  let next = 0;
  return (p) => {
    if (p.total === 0 || p.done < next) return;
    log.info({ done: p.done, total: p.total }, 'mirror copying');
    next = p.done + Math.max(1, Math.ceil(p.total / 10));
  };
}

/** How long an idle position may stay unrecorded in ClickHouse (standbys read it from there). */
const IDLE_RECORD_MS = 5000;
/** While changes flow, how long the rollup may trail the mirror when no reader waits for it. */
const ROLLUP_REFRESH_MS = 1000;
/**
 * While changes flow, a refresh waits at least this many times as long as the last one took. One
 * that aggregates days again grows with their rows, and takes CPU the passes' inserts want on a
 * small machine. Spaced so, it runs a twentieth of the time at most; readers meanwhile read the
 * changed days from the mirror.
 */
const ROLLUP_REFRESH_SPACING = 20;
/** While changes flow, how long a position may stay unrecorded: a restart copies those changes again (collapsed). */
const BUSY_RECORD_MS = 1000;
/**
 * While changes flow, a pass starts no sooner than this many times the last one's insert took
 * after it. Every insert costs embedded chdb a part (5–15 ms of CPU however few its rows): when the
 * machine is busy and inserts slow, passes batch more rows each instead of taking all the CPU left.
 * The insert only, from the first rows read: a pass that waited on Postgres (a lock, a failover, a
 * slow read) costs ClickHouse nothing, and spacing passes by that wait would add it again to every
 * change committed meanwhile.
 */
const PASS_SPACING = 2;
/**
 * The longest a pass's spacing holds the next one back, start to start. One slow insert (a merge
 * or a query on the other core took the CPU) would otherwise hold back every change committed in
 * twice its time; a sustained slowdown is still spaced as long as its inserts stay under half this.
 */
const MAX_PASS_SPACING_MS = 100;
/**
 * While changes came this recently, a pass that finds none is followed by the next a batch interval
 * later, not backed off: a writer's pause (a slow commit, a collection in its process) ends with
 * commits that would otherwise wait out the idle poll. An empty pass costs Postgres a snapshot.
 */
const FLOW_PAUSE_MS = 1000;
const ERROR_BACKOFF_MS = 1000;
const LAG_LOG_MS = 10_000;
/** The longest a waiting reader's pass is held back for batching. */
const WAITING_RETRY_MS = 20;

interface Waiter {
  target: Snapshot;
  /** the rollup table must cover the target too (a refresh of the changed days) */
  rollup: boolean;
  resolve: (reached: boolean) => void;
}

export class Mirror {
  readonly #db: Db;
  readonly #store: ReportingStore;
  readonly #log: Logger;
  readonly #options: MirrorOptions;
  #status: MirrorStatus = { position: EMPTY_SNAPSHOT, lagMs: 0, lastPassAt: 0, rowsMirrored: 0, lastCopy: null };
  /** the rollup table holds every change visible in this snapshot (never ahead of the mirror's position) */
  #rolledUp: Snapshot = EMPTY_SNAPSHOT;
  #refreshedAt = 0;
  /** how long the last rollup refresh took */
  #refreshMs = 0;
  /** when a pass last copied rows */
  #copiedAt = 0;
  /** how long the last pass took from its first rows read to their insert (not the wait for Postgres before, nor the rollup refresh or record after) */
  #insertMs = 0;
  #recorded = '';
  #recordedAt = 0;
  /** the position recorded in ClickHouse: what a restart resumes from */
  #durable: Snapshot = EMPTY_SNAPSHOT;
  #pruneLoop: Promise<void> | null = null;
  #wakePrune: (() => void) | null = null;
  readonly #passFailures: FailureLog;
  readonly #pruneFailures: FailureLog;
  #wakeRequested = false;
  #recordRequested = false;
  #wake: (() => void) | null = null;
  #stopping = false;
  #loop: Promise<void> | null = null;
  #exclusive: Promise<unknown> | null = null;
  #passDone: Promise<void> = Promise.resolve();
  /** the running rollup refresh and position record (#keepUp); it never rejects */
  #upkeep: Promise<void> | null = null;
  /** the position the running refresh brings the rollup to */
  #refreshingTo: Snapshot | null = null;
  #upkeepFailedAt = 0;
  readonly #upkeepFailures: FailureLog;
  #waiters = new Set<Waiter>();
  #lagWindow = { rows: 0, maxLagMs: 0, since: Date.now() };

  constructor(db: Db, store: ReportingStore, log: Logger, options: MirrorOptions) {
    this.#db = db;
    this.#store = store;
    this.#log = log;
    this.#options = options;
    this.#passFailures = new FailureLog(log, 'mirror pass');
    this.#pruneFailures = new FailureLog(log, 'change feed pruning');
    this.#upkeepFailures = new FailureLog(log, 'rollup refresh');
  }

  get #rollupRefreshMs(): number {
    return this.#options.rollupRefreshMs ?? ROLLUP_REFRESH_MS;
  }

  get status(): MirrorStatus {
    return { ...this.#status };
  }

  /** Every change visible in this snapshot is in the rollup too. */
  get rollupPosition(): Snapshot {
    return this.#rolledUp;
  }

  /** Creates the tables when needed and reads the recorded position; `start` also begins following. */
  async open(): Promise<{ reset: boolean }> {
    const { reset } = await this.#store.ensureSchema();
    const state = await this.#store.readState();
    this.#status.position = state?.position ?? EMPTY_SNAPSHOT;
    this.#rolledUp = this.#status.position;
    this.#store.forgetChangedDays({ exact: false });
    this.#recorded = formatSnapshot(this.#status.position);
    this.#recordedAt = Date.now();
    this.#durable = this.#status.position;
    // Before reading the feed from there: no target prunes what this one still has to copy.
    await registerFollower(this.#db, this.#store.follower, this.#durable);
    return { reset };
  }

  async start(): Promise<void> {
    const { reset } = await this.open();
    this.#log.info({ position: formatSnapshot(this.#status.position), reset }, reset ? 'mirror table (re)created: copying every transaction' : 'mirror resuming');
    // A new table is filled the way a rebuild does it: big inserts, merged before it goes live.
    if (reset) await this.rebuild(logProgress(this.#log));
    this.#loop = this.#run();
    this.#pruneLoop = this.#runPrunes();
  }

  /** A change was committed, or someone waits: run a pass soon. */
  wake(options: { record?: boolean } = {}): void {
    this.#wakeRequested = true;
    if (options.record) this.#recordRequested = true;
    this.#wake?.();
  }

  /**
   * Resolves true once everything committed before `target` is mirrored, and unless `rollup` is
   * false in the rollup table too (queries need not wait for that: they read changed days from the
   * mirror); false after `timeoutMs`.
   */
  waitFor(target: Snapshot, timeoutMs: number, options: { rollup?: boolean } = {}): Promise<boolean> {
    const rollup = options.rollup ?? true;
    if (this.#reached({ target, rollup })) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        target,
        rollup,
        resolve: (reached) => {
          clearTimeout(timer);
          this.#waiters.delete(waiter);
          resolve(reached);
        },
      };
      const timer = setTimeout(() => waiter.resolve(false), timeoutMs);
      this.#waiters.add(waiter);
      this.wake();
    });
  }

  /** Replaces the mirror with a fresh copy of every transaction, built beside the live table and swapped in. */
  async rebuild(progress: (p: RebuildProgress) => void): Promise<RebuildProgress> {
    return this.#runExclusive(() => this.#rebuildNow(progress));
  }

  async #rebuildNow(progress: (p: RebuildProgress) => void): Promise<RebuildProgress> {
    const shadow = `${this.#store.table}_rebuild`;
    await this.#store.command(`DROP TABLE IF EXISTS ${shadow}`);
    await this.#store.command(`DROP TABLE IF EXISTS ${rollupTable(shadow)}`);
    await this.#store.createTables(shadow);
    await this.#store.beginCopy(shadow);
    const counts: RebuildProgress = { done: 0, total: 0 };
    const started = Date.now();
    const pass = await readChanges(this.#db, null, async (chunk) => {
      if (this.#stopping) throw new Error('rebuild abandoned: shutting down');
      await this.#store.insertLines(chunk.lines, shadow, chunk.shape);
      counts.done += chunk.lines.length;
      progress({ ...counts });
    }, {
      onTotal: (total) => {
        counts.total = total;
        progress({ ...counts });
      },
    });
    counts.copyMs = Date.now() - started;
    await this.#store.mergeWhole(shadow);
    counts.mergeMs = Date.now() - started - counts.copyMs;
    await this.#store.fillRollup(shadow);
    counts.rollupMs = Date.now() - started - counts.copyMs - counts.mergeMs;
    // The rollup first: until the mirror follows, each live table still answers for the position it had.
    await this.#store.command(`EXCHANGE TABLES ${rollupTable(this.#store.table)} AND ${rollupTable(shadow)}`);
    await this.#store.command(`EXCHANGE TABLES ${this.#store.table} AND ${shadow}`);
    await this.#store.command(`DROP TABLE IF EXISTS ${shadow}`);
    await this.#store.command(`DROP TABLE IF EXISTS ${rollupTable(shadow)}`);
    await this.#record(pass.snapshot);
    this.#store.forgetChangedDays({ exact: true });
    this.#rolledUp = pass.snapshot;
    this.#advance(pass.snapshot);
    this.#log.info({ rows: counts.done, copyMs: counts.copyMs, mergeMs: counts.mergeMs, rollupMs: counts.rollupMs, position: formatSnapshot(pass.snapshot) }, 'mirror rebuilt');
    return counts;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    this.#wakePrune?.();
    await this.#loop;
    await this.#pruneLoop;
    await this.#exclusive?.catch(() => {});
    await this.#upkeep;
    // The last position, so a restart need not copy it again (it would, correctly, if this fails).
    if (this.#loop && formatSnapshot(this.#status.position) !== this.#recorded) {
      try {
        await this.#refreshRollup();
        await this.#record(this.#rolledUp);
      } catch (error) {
        this.#log.warn({ err: (error as Error).message }, 'recording the last mirror position failed; a restart copies its changes again');
      }
    }
    for (const waiter of this.#waiters) waiter.resolve(false);
  }

  /** Work that must not overlap a pass or a refresh (a rebuild): the loop waits for it. */
  async #runExclusive<T>(work: () => Promise<T>): Promise<T> {
    while (this.#exclusive) await this.#exclusive.catch(() => {});
    const running = (async () => {
      await this.#passDone;
      await this.#upkeep;
      return work();
    })();
    this.#exclusive = running;
    try {
      return await running;
    } finally {
      this.#exclusive = null;
      this.wake();
    }
  }

  async #run(): Promise<void> {
    let delay = 0;
    /** passes in a row that found nothing: the idle poll backs off from the batch interval to the poll interval */
    let emptyPasses = 0;
    while (!this.#stopping) {
      await this.#sleep(delay);
      if (this.#stopping) break;
      while (this.#exclusive) await this.#exclusive.catch(() => {});
      this.#wakeRequested = false;
      const started = Date.now();
      let done!: () => void;
      this.#passDone = new Promise((resolve) => (done = resolve));
      try {
        const rows = await this.#pass();
        this.#passFailures.succeeded();
        emptyPasses = rows > 0 ? 0 : emptyPasses + 1;
        // While changes keep coming, the next pass starts a batch interval after this one did, or
        // PASS_SPACING times this pass's insert when that is longer (not long for a waiting
        // reader). A pass that finds nothing is no sign the flow stopped (a commit every 10 ms
        // leaves some intervals empty, a writer may pause a moment): until changes have stopped
        // for FLOW_PAUSE_MS the next pass still comes a batch interval later, then the poll backs
        // off to the idle one.
        const took = Date.now() - started;
        const soon = Math.max(0, Math.max(this.#options.batchIntervalMs, Math.min(PASS_SPACING * this.#insertMs, MAX_PASS_SPACING_MS)) - took);
        const poll = Date.now() - this.#copiedAt < FLOW_PAUSE_MS ? this.#options.batchIntervalMs
          : Math.min(this.#options.pollIntervalMs, Math.max(this.#options.batchIntervalMs, 1) * 2 ** (emptyPasses - 1));
        if (this.#wakeRequested || this.#waiters.size > 0) delay = Math.min(soon, WAITING_RETRY_MS);
        else if (rows > 0) delay = soon;
        // Idle with days not rolled up yet: the refresh that is due then.
        else if (this.#store.rollupTrails) delay = Math.min(poll, this.#untilRefresh(Date.now()));
        else delay = poll;
      } catch (error) {
        this.#passFailures.failed(error);
        delay = ERROR_BACKOFF_MS;
      } finally {
        done();
      }
    }
  }

  /** Sleeps up to `ms`, cut short by a wake-up. */
  #sleep(ms: number): Promise<void> {
    if (this.#wakeRequested || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(finish, ms);
      function finish() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = () => {
        this.#wake = null;
        finish();
      };
    });
  }

  /** One pass; the number of changed rows it copied. */
  async #pass(): Promise<number> {
    let oldest = Infinity;
    let pass: FeedPass;
    const started = Date.now();
    let readAt = 0;
    try {
      // Whether a change is new to the rollup is judged against the position it has once the
      // running refresh is in: that refresh counts every change before it.
      pass = await readChanges(this.#db, this.#status.position, async (chunk: FeedChunk) => {
        readAt ||= Date.now();
        this.#store.noteChangedDays(chunk.days);
        await this.#store.insertLines(chunk.lines, this.#store.table, chunk.shape);
        oldest = Math.min(oldest, chunk.oldestChangeMs);
      }, { rolledUp: this.#refreshingTo ?? this.#rolledUp });
    } catch (error) {
      if (!(error instanceof FeedPruned)) throw error;
      this.#log.warn({ reason: error.message }, 'mirror position is older than the pruned change feed: rebuilding');
      await this.#upkeep;
      await this.#rebuildNow(logProgress(this.#log));
      return 0;
    }
    const now = Date.now();
    this.#insertMs = readAt ? now - readAt : 0;
    this.#status.lastPassAt = now;
    if (pass.rows > 0) {
      this.#status.lagMs = Math.max(0, now - oldest);
      this.#status.rowsMirrored += pass.rows;
      this.#status.lastCopy = { startedAt: started, snapshotAt: pass.snapshotAt, readAt, insertedAt: now, rows: pass.rows };
      this.#noteLag(pass.rows, this.#status.lagMs);
    } else {
      this.#status.lagMs = 0;
    }
    // No day changed since the rollup's position: it holds this one too.
    if (!this.#store.rollupTrails) this.#rolledUp = pass.snapshot;
    // The rows are in ClickHouse: readers waiting for them go ahead now, not after the rollup's
    // refresh or the position's own insert (a restart before it is recorded replays these changes).
    const released = this.#advance(pass.snapshot);
    // Released readers send their queries (on the store's query connection) within this turn of
    // the event loop, before the next pass's work takes the thread.
    if (released > 0) await new Promise((resolve) => setImmediate(resolve));
    if (pass.rows > 0) this.#copiedAt = now;
    this.#keepUp(now);
    return pass.rows;
  }

  /**
   * Starts, unless one runs, the rollup's refresh when it is due and the position's record after
   * it (or alone when only the record is due), beside the passes. Called between passes only: the
   * refresh takes the days noted so far and brings the rollup to the position that covers them.
   */
  #keepUp(now: number): void {
    if (this.#upkeep || this.#stopping || now - this.#upkeepFailedAt < ERROR_BACKOFF_MS) return;
    const refresh = this.#store.rollupTrails && (this.#rollupAwaited() || this.#refreshDue(now) || this.#recordRequested);
    const record = formatSnapshot(this.#rolledUp) !== this.#recorded && (this.#recordRequested || now - this.#recordedAt > IDLE_RECORD_MS);
    if (!refresh && !record) return;
    // A record asked for while this upkeep runs may need a later position than it records: the
    // request stays for the next one.
    const requested = this.#recordRequested;
    this.#recordRequested = false;
    this.#upkeep = this.#upkeepRollup(refresh, requested).finally(() => {
      this.#upkeep = null;
      // A reader may wait for a rollup past this refresh's position, or a standby for a record: a pass starts the next.
      if (this.#waiters.size > 0 || this.#recordRequested) this.wake();
    });
  }

  /** The rollup's refresh (when `refresh`) and the position's record when due; a failure is logged and retried after ERROR_BACKOFF_MS. */
  async #upkeepRollup(refresh: boolean, requested: boolean): Promise<void> {
    try {
      if (refresh) await this.#refreshRollup();
      const due = Date.now() - this.#recordedAt > (refresh ? BUSY_RECORD_MS : IDLE_RECORD_MS);
      if (formatSnapshot(this.#rolledUp) !== this.#recorded && (requested || due)) await this.#record(this.#rolledUp);
      else if (requested) this.#recordRequested = true;
      this.#upkeepFailures.succeeded();
    } catch (error) {
      if (requested) this.#recordRequested = true;
      this.#upkeepFailedAt = Date.now();
      this.#upkeepFailures.failed(error);
    }
  }

  /**
   * Ms until #keepUp may start the rollup's refresh: none while one runs (its end wakes the loop
   * when a reader or a standby waits) or while a failed one backs off.
   */
  #untilRefresh(now: number): number {
    if (this.#upkeep) return Infinity;
    return Math.max(0, this.#refreshedAt + this.#rollupRefreshMs - now, this.#upkeepFailedAt + ERROR_BACKOFF_MS - now);
  }

  /** Whether the rollup's refresh is due: while changes flow (a pass copied rows within the idle poll interval), spaced by its own cost too. */
  #refreshDue(now: number): boolean {
    const flowing = now - this.#copiedAt < this.#options.pollIntervalMs;
    const spacing = flowing ? Math.max(this.#rollupRefreshMs, ROLLUP_REFRESH_SPACING * this.#refreshMs) : this.#rollupRefreshMs;
    return now - this.#refreshedAt >= spacing;
  }

  /** A reader waits for the rollup at a snapshot the mirror already covers. */
  #rollupAwaited(): boolean {
    for (const waiter of this.#waiters) if (waiter.rollup && covers(this.#status.position, waiter.target) && !this.#reached(waiter)) return true;
    return false;
  }

  /** Whether what a reader waits for is in ClickHouse: the mirror covers its target and, when it asks, so does the rollup table. */
  #reached(waiter: Pick<Waiter, 'target' | 'rollup'>): boolean {
    if (!covers(this.#status.position, waiter.target)) return false;
    return !waiter.rollup || covers(this.#rolledUp, waiter.target);
  }

  /**
   * Refreshes the days changed since the rollup's position: it then holds the mirror's position as
   * it was when the refresh began (between passes: the days noted then are every day it changed).
   * Readers waiting for the rollup there go ahead.
   */
  async #refreshRollup(): Promise<void> {
    const position = this.#status.position;
    const started = Date.now();
    this.#refreshingTo = position;
    try {
      await this.#store.refreshRollup();
    } finally {
      this.#refreshingTo = null;
    }
    this.#refreshedAt = Date.now();
    this.#refreshMs = this.#refreshedAt - started;
    this.#rolledUp = position;
    this.#advance(this.#status.position);
  }

  async #record(snapshot: Snapshot): Promise<void> {
    await this.#store.writePosition(snapshot);
    this.#recorded = formatSnapshot(snapshot);
    this.#recordedAt = Date.now();
    this.#durable = snapshot;
  }

  /**
   * Prunes until stopped: rounds back to back while rows below the recorded position remain, then
   * every interval. A rebuild runs alone: after a first catch-up the rounds deleting its million
   * change rows took the CPU the rebuild right after it wanted.
   */
  async #runPrunes(): Promise<void> {
    // Nothing new becomes prunable faster than passes record positions: never spin faster than they poll.
    const interval = Math.max(this.#options.pruneIntervalMs ?? DEFAULT_PRUNE_INTERVAL_MS, this.#options.pollIntervalMs);
    while (!this.#stopping) {
      while (this.#exclusive && !this.#stopping) await this.#exclusive.catch(() => {});
      if (this.#stopping) break;
      const more = await this.#prune();
      if (this.#stopping) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(finish, more ? 0 : interval);
        function finish() {
          clearTimeout(timer);
          resolve();
        }
        this.#wakePrune = finish;
      });
      this.#wakePrune = null;
    }
  }

  /** One round of deletes of change rows the recorded position covers; true when more may remain. A failure only delays it (logged once). */
  async #prune(): Promise<boolean> {
    const durable = this.#durable;
    if (durable.xmin === 0n) return false;
    try {
      const { more } = await pruneRound(this.#db, this.#store.follower, durable, PRUNE_BATCHES_PER_ROUND);
      this.#pruneFailures.succeeded();
      return more;
    } catch (error) {
      this.#pruneFailures.failed(error);
      return false;
    }
  }

  /** Moves the position on; the number of waiting readers it released. */
  #advance(position: Snapshot): number {
    this.#status.position = position;
    let released = 0;
    for (const waiter of this.#waiters) {
      if (!this.#reached(waiter)) continue;
      waiter.resolve(true);
      released += 1;
    }
    return released;
  }

  #noteLag(rows: number, lagMs: number): void {
    const window = this.#lagWindow;
    window.rows += rows;
    window.maxLagMs = Math.max(window.maxLagMs, lagMs);
    const now = Date.now();
    if (now - window.since < LAG_LOG_MS) return;
    this.#log.info({ rows: window.rows, maxLagMs: window.maxLagMs, position: formatSnapshot(this.#status.position) }, 'mirror lag');
    this.#lagWindow = { rows: 0, maxLagMs: 0, since: now };
  }
}
