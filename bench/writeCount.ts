/**
 * Rows and index entries a request writes, measured: PostgreSQL's own counters of inserted and
 * updated rows per table (pg_stat_user_tables) before and after a run of requests, and each touched
 * table's indexes from pg_index. An inserted row adds one entry to every index, an update that is
 * not HOT one to every index again; a partial index counts only the rows that meet its predicate
 * (its rows matching the predicate, counted before and after the run).
 *
 * The counters reach pg_stat_user_tables when each backend flushes them: at most a second apart
 * while it works, and within about ten seconds once idle. So the counts are read again until the
 * table whose rows the run is known to add (`anchorTable`, `expected` rows) shows all of them: a
 * backend flushes every table's counters at once, and a request's rows are written by one backend.
 *
 * Beside them, the WAL the run wrote (the server's insert position before and after): the whole
 * server's, so exact on the bench's own embedded server and an upper bound on a shared one.
 */
import { createDb, rows, type Db } from '../api/db/connection.ts';

export interface TableWrites {
  table: string;
  inserted: number;
  /** updates that were not HOT (each adds an entry to every index) */
  updatedCold: number;
  updatedHot: number;
  indexes: number;
  entries: number;
}

export interface WriteCount {
  requests: number;
  rowsPerRequest: number;
  entriesPerRequest: number;
  walBytesPerRequest: number;
  tables: TableWrites[];
}

interface Counters {
  table: string;
  ins: number;
  upd: number;
  hot: number;
}

async function counters(db: Db): Promise<Map<string, Counters>> {
  const found = await rows<Counters>(db,
    `select schemaname || '.' || relname as table, n_tup_ins::bigint::float8 as ins, n_tup_upd::bigint::float8 as upd, n_tup_hot_upd::bigint::float8 as hot
       from pg_stat_user_tables`);
  return new Map(found.map((c) => [c.table, c]));
}

interface IndexOf {
  index: string;
  predicate: string | null;
}

async function indexesOf(db: Db, table: string): Promise<IndexOf[]> {
  return rows<IndexOf>(db,
    `select i.indexrelid::regclass::text as index, pg_get_expr(i.indpred, i.indrelid) as predicate
       from pg_index i where i.indrelid = ?::regclass`, [table]);
}

async function matching(db: Db, table: string, predicate: string): Promise<number> {
  const [{ n }] = await rows<{ n: number }>(db, `select count(*)::float8 as n from ${table} where ${predicate}`);
  return n;
}

async function walPosition(db: Db): Promise<string> {
  const [{ lsn }] = await rows<{ lsn: string }>(db, 'select pg_current_wal_insert_lsn()::text as lsn');
  return lsn;
}

async function walSince(db: Db, lsn: string): Promise<number> {
  const [{ bytes }] = await rows<{ bytes: number }>(db, 'select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), ?::pg_lsn)::float8 as bytes', [lsn]);
  return bytes;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `table`'s inserted-row counter is at least `atLeast` (the flush delay above); throws after 30 s. */
async function settled(db: Db, table: string, atLeast: number): Promise<Map<string, Counters>> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const now = await counters(db);
    if ((now.get(table)?.ins ?? 0) >= atLeast) return now;
    if (Date.now() > deadline) throw new Error(`${table}: the statistics counters did not reach ${atLeast} inserted rows within 30 s`);
    await sleep(500);
  }
}

/**
 * Counts what `run` writes. `anchorTable` (schema-qualified) gets exactly one row per request and
 * holds `existing` rows before the run (its counter is waited for before and after);
 * `run` answers how many requests it made.
 */
export async function countWrites(databaseUrl: string, anchorTable: string, run: () => Promise<number>): Promise<WriteCount> {
  const db = createDb(databaseUrl, 1);
  try {
    const [{ n: existing }] = await rows<{ n: number }>(db, `select count(*)::float8 as n from ${anchorTable}`);
    const before = await settled(db, anchorTable, existing);
    const partialBefore = new Map<string, number>();
    const partials = async (into: Map<string, number>, tables: string[]) => {
      for (const table of tables) {
        for (const index of await indexesOf(db, table)) if (index.predicate) into.set(index.index, await matching(db, table, index.predicate));
      }
    };
    // Partial indexes are counted on every table now, as which tables a run touches is known only after it.
    await partials(partialBefore, [...before.keys()]);
    const walBefore = await walPosition(db);
    const requests = await run();
    const walBytes = await walSince(db, walBefore);
    const after = await settled(db, anchorTable, (before.get(anchorTable)?.ins ?? 0) + requests);
    const tables: TableWrites[] = [];
    for (const [table, end] of after) {
      const start = before.get(table) ?? { table, ins: 0, upd: 0, hot: 0 };
      const inserted = end.ins - start.ins;
      const updated = end.upd - start.upd;
      const updatedHot = end.hot - start.hot;
      if (inserted === 0 && updated === 0) continue;
      const indexes = await indexesOf(db, table);
      let entries = 0;
      for (const index of indexes) {
        entries += index.predicate
          ? Math.max(0, (await matching(db, table, index.predicate)) - (partialBefore.get(index.index) ?? 0))
          : inserted + updated - updatedHot;
      }
      tables.push({ table, inserted, updatedCold: updated - updatedHot, updatedHot, indexes: indexes.length, entries });
    }
    tables.sort((a, b) => b.entries - a.entries || a.table.localeCompare(b.table));
    const per = (total: number) => Math.round((total / requests) * 100) / 100;
    return {
      requests,
      rowsPerRequest: per(tables.reduce((sum, t) => sum + t.inserted, 0)),
      entriesPerRequest: per(tables.reduce((sum, t) => sum + t.entries, 0)),
      walBytesPerRequest: Math.round(walBytes / requests),
      tables,
    };
  } finally {
    await db.destroy();
  }
}

/** The count as lines for stdout: the totals, then each table's share per request. */
export function describeWrites(label: string, count: WriteCount): string {
  const per = (n: number) => (n / count.requests).toFixed(2);
  return [
    `${label}: ${count.rowsPerRequest} rows and ${count.entriesPerRequest} index entries per request, ${count.walBytesPerRequest} bytes of WAL (measured over ${count.requests} requests)`,
    ...count.tables.map((t) => `  ${t.table}: ${per(t.inserted)} rows inserted, ${per(t.updatedCold)} updated (not HOT), ${per(t.updatedHot)} HOT; ${t.indexes} indexes, ${per(t.entries)} entries`),
  ].join('\n');
}
