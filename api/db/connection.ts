/**
 * The database handle every repository uses: one pg.Pool per process under a thin layer of our
 * own (knex is kept for migrations and administration, see admin.ts). What it adds to pg:
 * - `?` placeholders, converted to `$n` once per distinct SQL text (placeholders.ts);
 * - named prepared statements for texts that repeat, so Postgres parses them once per connection
 *   (bounded: at most MAX_NAMED texts get a name, later ones run unnamed). Measured with
 *   bench/db-layer.ts: a quarter less CPU and 1.5-2x the rate per primary-key read than unnamed. Behind
 *   PgBouncer in transaction mode they need its max_prepared_statements (1.21 or later);
 * - transactions with knex's semantics for our use: commit when the work resolves, roll back and
 *   rethrow its error when it rejects; a transaction inside one is a savepoint.
 */
import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';
import pg from 'pg';
import { createKnex } from './admin.ts';
import { currentAuditSetting } from './auditContext.ts';
import { positional } from './placeholders.ts';
import { primaryLost, primaryPool } from './primary.ts';

// BIGINT (money in minor units, seq) comes back as a JS number: amounts stay far below 2^53.
pg.types.setTypeParser(20, (value: string) => Number(value));

/** Texts seen this often get a prepared-statement name (one-off SQL stays unnamed). */
const NAME_AFTER_USES = 2;
/** Named texts at most, so dynamic SQL (list filters) cannot grow a connection's prepared set without bound. */
const MAX_NAMED = 300;

export interface TransactionOptions {
  isolationLevel?: 'read committed' | 'repeatable read' | 'serializable';
  readOnly?: boolean;
  /**
   * Statements without bindings sent with BEGIN (or the savepoint), in its round trip: each runs
   * after the one before it, in a snapshot of its own under read committed (a lock taken by one is
   * held when the next reads). Their rows, in order, are the transaction handle's `opened`.
   */
  opening?: string[];
}

/** A fragment of SQL with `?` placeholders and its bindings in order: what repositories compose queries from. */
export interface Sql {
  sql: string;
  bindings: unknown[];
}

export interface QueryEvent {
  sql: string;
  bindings: unknown[];
}

export interface Db {
  /**
   * A knex query builder, for test assertions and administration only: it runs on a knex instance
   * of its own, created on first use, outside any transaction. Runtime code uses `rows()`.
   */
  (table: string): ReturnType<typeof tableOf>;
  /** Runs parameterised SQL (`?` placeholders) and returns pg's result. */
  raw(sql: string, bindings?: readonly unknown[]): Promise<pg.QueryResult>;
  /** Runs `work` in a transaction (a savepoint inside one): committed when it resolves, rolled back when it rejects. */
  transaction<T>(work: (tx: Db) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** Opens a transaction the caller ends with commit() or rollback(). */
  transaction(work?: undefined, options?: TransactionOptions): Promise<OpenTransaction>;
  /** Closes the pool (a transaction: not allowed). */
  destroy(): Promise<void>;
  /** Whether statements run inside a transaction (this handle's) rather than each on its own. */
  readonly inTransaction: boolean;
  /** In a transaction begun with `opening` (TransactionOptions): each opening statement's rows, in order. */
  readonly opened?: Array<Record<string, unknown>[]>;
  /** 'query': every statement as sent, `{ sql, bindings }` with `$n` placeholders (tests capture SQL this way). */
  on(event: 'query', listener: (query: QueryEvent) => void): void;
  off(event: 'query', listener: (query: QueryEvent) => void): void;
}

export interface OpenTransaction extends Db {
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

/** What a handle sends its statements through: the pool, or the client a transaction holds. */
interface Target {
  query(config: pg.QueryConfig): Promise<pg.QueryResult>;
}

interface Shared {
  pool: pg.Pool;
  events: EventEmitter;
  connectionString: string;
  knex: Knex | null;
  destroyed: Promise<void> | null;
}

export function createDb(connectionString: string, poolSize = 10): Db {
  const pool = primaryPool(connectionString, {
    application_name: 'settle',
    max: poolSize,
    min: 0,
    // knex's (tarn's) defaults, which the service ran with.
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 60_000,
  });
  // A connection that breaks while idle is dropped by the pool; one that breaks while held fails
  // its next query. Either way the error is the caller's, not an unhandled 'error' event.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return handle({ pool, events: new EventEmitter(), connectionString, knex: null, destroyed: null }, null);
}

/** Runs parameterised SQL (values always bound, never spliced) and returns its rows. */
export async function rows<T = Record<string, unknown>>(db: Db, sql: string, bindings: readonly unknown[] = []): Promise<T[]> {
  const result = await db.raw(sql, bindings);
  return result.rows as T[];
}

// ---- statements --------------------------------------------------------------------------------

interface Usage {
  uses: number;
  name: string | null;
}
const usage = new Map<string, Usage>();
let named = 0;
/** Bumped when Postgres refuses a prepared statement after a schema change: every name is new again. */
let generation = 0;

function statement(sql: string, bindings: readonly unknown[]): pg.QueryConfig {
  const { text, count } = positional(sql);
  if (count !== bindings.length) throw new Error(`Expected ${bindings.length} bindings, saw ${count}`);
  if (bindings.includes(undefined)) {
    throw new Error(`Undefined binding(s) detected for keys [${bindings.flatMap((b, i) => (b === undefined ? [i] : []))}] when compiling RAW query: ${sql}`);
  }
  // Without bindings (BEGIN, COMMIT, `select 1`, DDL) the simple protocol is one message: no name.
  if (count === 0) return { text };
  return { text, values: bindings as unknown[], name: nameFor(text) };
}

function nameFor(text: string): string | undefined {
  let seen = usage.get(text);
  if (!seen) {
    if (usage.size >= MAX_NAMED * 4) return undefined;
    seen = { uses: 0, name: null };
    usage.set(text, seen);
  }
  if (seen.name === null && ++seen.uses >= NAME_AFTER_USES && named < MAX_NAMED) seen.name = `settle_${generation}_${++named}`;
  return seen.name ?? undefined;
}

function isReadOnly(error: unknown): boolean {
  return (error as { code?: string }).code === '25006';
}

/** ALTER TABLE under a running process: a prepared `select *` now returns other columns. */
function isStalePlan(error: unknown): boolean {
  return (error as { code?: string }).code === '0A000' && /cached plan must not change result type/.test((error as Error).message);
}

function forgetNames(): void {
  usage.clear();
  named = 0;
  generation += 1;
}

/** knex's own builder for a table (its type is what the call signature of Db promises). */
function tableOf(knex: Knex, table: string) {
  return knex(table);
}

// ---- handles -----------------------------------------------------------------------------------

function handle(shared: Shared, tx: TxState | null): Db {
  const target: Target = tx ?? shared.pool;
  const db = ((table: string) => {
    if (tx) throw new Error('The query builder runs outside transactions; use rows() inside one');
    shared.knex ??= createKnex(shared.connectionString, 2);
    return tableOf(shared.knex, table);
  }) as Db;
  db.raw = async (sql, bindings = []) => {
    const config = statement(sql, bindings);
    if (tx) tx.ensureOpen();
    if (shared.events.listenerCount('query') > 0) shared.events.emit('query', { sql: config.text, bindings: config.values ?? [] });
    try {
      return await target.query(config);
    } catch (error) {
      if (isReadOnly(error)) {
        // The host stopped taking writes (a standby now, or fenced in a failover): look for the
        // primary again, and end this connection rather than keep it in the pool.
        primaryLost(shared.connectionString);
        if (tx) tx.discard = true;
      }
      if (!config.name || !isStalePlan(error)) throw poolTimeout(error);
      forgetNames();
      // Inside a transaction the failed statement has aborted it; outside, run it once more by its new name.
      if (tx) throw error;
      return target.query(statement(sql, bindings));
    }
  };
  db.transaction = ((work?: (tx: Db) => Promise<unknown>, options: TransactionOptions = {}) =>
    tx ? savepoint(shared, tx, work, options.opening ?? []) : begin(shared, work, options)) as Db['transaction'];
  db.destroy = () => {
    if (tx) return Promise.reject(new Error('destroy() closes the pool; a transaction ends with commit() or rollback()'));
    // Like knex's, a second destroy() is harmless.
    shared.destroyed ??= Promise.all([shared.pool.end(), shared.knex?.destroy()]).then(() => {});
    return shared.destroyed;
  };
  Object.defineProperty(db, 'inTransaction', { value: tx !== null });
  db.on = (event, listener) => void shared.events.on(event, listener);
  db.off = (event, listener) => void shared.events.off(event, listener);
  return db;
}

const readOnlyHost = new Error('The connection\'s host accepts no writes');

class TxState {
  client: pg.PoolClient;
  done = false;
  savepoints = 0;
  /** Set when the connection must not serve another transaction (its host accepts no writes). */
  discard = false;
  /**
   * The statement last sent. A connection runs one statement at a time, so statements sent
   * together (a `Promise.all` over one transaction) wait here: pg warns of a query sent to a
   * busy client, and pg 9 refuses it.
   */
  #last: Promise<unknown> = Promise.resolve();
  constructor(client: pg.PoolClient) {
    this.client = client;
  }
  query(config: pg.QueryConfig | string): Promise<pg.QueryResult> {
    const sent = this.#last.then(() => this.client.query(config));
    this.#last = sent.catch(() => {});
    return sent;
  }
  ensureOpen(): void {
    if (this.done) throw new Error('Transaction query already complete');
  }
}

function beginSql(options: TransactionOptions): string {
  const modes = [options.isolationLevel && `isolation level ${options.isolationLevel}`, options.readOnly && 'read only'].filter(Boolean);
  return modes.length ? `begin ${modes.join(' ')}` : 'begin';
}

async function begin(shared: Shared, work: ((tx: Db) => Promise<unknown>) | undefined, options: TransactionOptions): Promise<unknown> {
  const client = await connect(shared.pool);
  let opened: Array<Record<string, unknown>[]>;
  try {
    // The actor of the work under way rides with BEGIN (one round trip) for the audit triggers.
    const actor = currentAuditSetting();
    const first = actor === null ? [beginSql(options)] : [beginSql(options), `select set_config('settle.audit', ${client.escapeLiteral(actor)}, true)`];
    opened = await openingRows(shared, client, first, options.opening ?? []);
  } catch (error) {
    client.release(error as Error);
    throw error;
  }
  const state = new TxState(client);
  let ended = false;
  const end = async (sql: 'commit' | 'rollback') => {
    state.ensureOpen();
    state.done = true;
    if (ended) return;
    ended = true;
    try {
      await state.query(sql);
    } catch (error) {
      // The connection is in an unknown state: close it rather than hand it to the next caller.
      client.release(error as Error);
      throw error;
    }
    client.release(state.discard ? readOnlyHost : undefined);
  };
  const tx = Object.assign(handle(shared, state), { commit: () => end('commit'), rollback: () => end('rollback'), opened }) as OpenTransaction;
  if (!work) return tx;
  return settle(tx, work, () => end('commit'), () => end('rollback'), state);
}

/** Sends `first` and then `opening` as one simple-protocol message; the rows of `opening`'s statements, in order. */
async function openingRows(shared: Shared, client: { query(text: string): Promise<unknown> }, first: string[], opening: string[]): Promise<Array<Record<string, unknown>[]>> {
  if (shared.events.listenerCount('query') > 0) for (const sql of opening) shared.events.emit('query', { sql, bindings: [] });
  const results = await client.query([...first, ...opening].join('; '));
  // pg answers one result for one statement, an array of them for several.
  const all = (Array.isArray(results) ? results : [results]) as pg.QueryResult[];
  return all.slice(first.length).map((result) => result.rows);
}

async function savepoint(shared: Shared, outer: TxState, work: ((tx: Db) => Promise<unknown>) | undefined, opening: string[]): Promise<unknown> {
  outer.ensureOpen();
  const name = `settle_sp_${++outer.savepoints}`;
  const opened = await openingRows(shared, { query: (text) => outer.query(text) }, [`savepoint ${name}`], opening);
  const state = outer;
  let ended = false;
  const end = async (sql: string) => {
    if (ended) return;
    ended = true;
    await outer.query(sql);
  };
  const tx = Object.assign(handle(shared, state), {
    commit: () => end(`release savepoint ${name}`),
    rollback: () => end(`rollback to savepoint ${name}`),
    opened,
  }) as OpenTransaction;
  if (!work) return tx;
  return settle(tx, work, () => end(`release savepoint ${name}`), () => end(`rollback to savepoint ${name}`), null);
}

/** Commits when `work` resolves; when it rejects, rolls back and rethrows its error (a failed rollback only closes the connection). */
async function settle(tx: Db, work: (tx: Db) => Promise<unknown>, commit: () => Promise<void>, rollback: () => Promise<void>, state: TxState | null): Promise<unknown> {
  let result: unknown;
  try {
    result = await work(tx);
  } catch (error) {
    try {
      await rollback();
    } catch {
      // the work's error is the one the caller needs
    }
    throw error;
  }
  if (state?.done) return result;
  await commit();
  return result;
}

async function connect(pool: pg.Pool): Promise<pg.PoolClient> {
  try {
    return await pool.connect();
  } catch (error) {
    throw poolTimeout(error);
  }
}

/** api/errors.ts recognises an exhausted pool by knex's error name (a 503, not a 500). */
function poolTimeout(error: unknown): unknown {
  if (error instanceof Error && error.message === 'timeout exceeded when trying to connect') error.name = 'KnexTimeoutError';
  return error;
}
