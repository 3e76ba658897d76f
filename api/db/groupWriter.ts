/**
 * Group commit for writes that each commit on their own (the one-statement payment): writes that
 * arrive in one turn of the event loop, or while a statement of theirs is running, go together as
 * one statement. A lone write goes at the end of its turn, so an idle service adds no latency;
 * under load the statement's start, its triggers, the round trip and the commit are paid once per
 * group instead of once per write.
 *
 * Beside a running statement a second one starts only for a group of `minBeside` writes or more:
 * fewer wait for the running one to end and go with those arriving meanwhile, so a loaded service
 * does not pay a statement's fixed cost (a card payment's: about twice the Postgres CPU of one
 * more payment in it) for each straggler that arrives while another statement runs.
 *
 * A group that fails for something one write can cause (the database refusing a row: a data or
 * integrity error, or a trigger's exception) is written again one by one, so each write gets its
 * own answer and no write fails for another's sake. Any other failure (the database unreachable,
 * a timeout) is every write's answer at once, not retried write by write.
 */
export type WriteMany<Item, Result> = (items: Item[]) => Promise<Result[]>;

interface Waiting<Item, Result> {
  item: Item;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

export class GroupWriter<Item, Result> {
  readonly #writeMany: WriteMany<Item, Result>;
  readonly #maxGroup: number;
  readonly #maxRunning: number;
  readonly #minBeside: number;
  readonly #besideAfterMs: number | undefined;
  #waiting: Array<Waiting<Item, Result>> = [];
  #running = 0;
  /** whether the end of this turn of the event loop starts what waits */
  #gathering = false;
  /** starts what waits beside the running statement, however few, once it has waited besideAfterMs */
  #besideTimer: NodeJS.Timeout | null = null;

  /**
   * `maxRunning`: statements of this writer at once (each holds a connection); `maxGroup`: writes
   * per statement at most; `minBeside` (default 1): writes a statement takes at least to start
   * while another of this writer runs; `besideAfterMs`: how long fewer than that wait at most for
   * the running statement (none when unset). A statement can wait on a row lock for as long as
   * another transaction holds it: past the bound, the writes behind it go beside it.
   */
  constructor(writeMany: WriteMany<Item, Result>, options: { maxGroup: number; maxRunning: number; minBeside?: number; besideAfterMs?: number }) {
    this.#writeMany = writeMany;
    this.#maxGroup = options.maxGroup;
    this.#maxRunning = options.maxRunning;
    this.#minBeside = options.minBeside ?? 1;
    this.#besideAfterMs = options.besideAfterMs;
  }

  write(item: Item): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      if (this.#gathering) return;
      this.#gathering = true;
      setImmediate(() => {
        this.#gathering = false;
        this.#next();
      });
    });
  }

  #next(besideAnyway = false): void {
    while (this.#running < this.#maxRunning && this.#waiting.length > 0) {
      if (this.#running > 0 && this.#waiting.length < this.#minBeside && !besideAnyway) return this.#startBesideLater();
      besideAnyway = false;
      // The writes the bound was counting for go now: a later wait counts afresh.
      if (this.#besideTimer) clearTimeout(this.#besideTimer);
      this.#besideTimer = null;
      const group = this.#waiting.splice(0, this.#maxGroup);
      this.#running += 1;
      void this.#run(group).finally(() => {
        this.#running -= 1;
        this.#next();
      });
    }
  }

  #startBesideLater(): void {
    if (this.#besideAfterMs === undefined || this.#besideTimer) return;
    this.#besideTimer = setTimeout(() => {
      this.#besideTimer = null;
      this.#next(true);
    }, this.#besideAfterMs);
    this.#besideTimer.unref();
  }

  async #run(group: Array<Waiting<Item, Result>>): Promise<void> {
    try {
      const results = await this.#writeMany(group.map((w) => w.item));
      group.forEach((w, i) => w.resolve(results[i]));
      return;
    } catch (error) {
      if (group.length === 1 || !refusesARow(error)) {
        for (const w of group) w.reject(error);
        return;
      }
    }
    // One at a time, so a failing group holds no more connections than it did.
    for (const w of group) {
      try {
        w.resolve((await this.#writeMany([w.item]))[0]);
      } catch (error) {
        w.reject(error);
      }
    }
  }
}

/** SQLSTATE classes a single row can cause: 22 data exception, 23 integrity constraint, P0 a PL/pgSQL raise. */
function refusesARow(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^(22|23|P0)/.test(code);
}

/**
 * Whether writes that commit on their own share statements: SETTLE_GROUP_COMMIT (api/config.ts),
 * applied at start-up (`applyWriteSettings`); off writes each in a statement of its own.
 */
export const groupCommit = { enabled: true };

/**
 * Two statements of a kind at once per process, the second for 8 writes or more, or for any once
 * they have waited 10 ms: the rest of its writes wait and go in groups.
 */
export const GROUPS = { maxGroup: 64, maxRunning: 2, minBeside: 8, besideAfterMs: 10 };

const writers = new WeakMap<object, Map<string, GroupWriter<any, any>>>();

/** The one group writer of `kind` over the pool `db` (made by `writeMany` on first use). */
export function groupWriterOf<Item, Result>(db: object, kind: string, writeMany: WriteMany<Item, Result>): GroupWriter<Item, Result> {
  let kinds = writers.get(db);
  if (!kinds) writers.set(db, (kinds = new Map()));
  let writer = kinds.get(kind);
  if (!writer) kinds.set(kind, (writer = new GroupWriter(writeMany, GROUPS)));
  return writer;
}
