/**
 * The ClickHouse side of reporting, through @clickhouse/client only: embedded chdb (plugged in with
 * `createChdbConnection`, one data directory per process) by default, a ClickHouse server when
 * CLICKHOUSE_URL is set. The DDL and every statement are the same text for both. Settings that
 * matter travel in the SQL (`FINAL`, `SETTINGS …`), because a chdb session keeps session settings.
 */
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { createChdbConnection } from 'chdb/connection';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../api/config.ts';
import { insertStatement, rollupAddSql, type FeedShape, rollupDays, rollupDdl, rollupFillSql, rollupMonthsFillSql, rollupMonthsRefreshSql, rollupRefreshSql, rollupTable, schemaFingerprint, tableDdl } from './columns.ts';
import { Params } from './compiler.ts';
import { EMPTY_SNAPSHOT, formatSnapshot, parseSnapshot, type ChangedDay, type Snapshot } from './feed.ts';

const STATE_NAME = 'transactions';
/** Tenants whose days one rollup refresh statement covers. */
const TENANTS_PER_REFRESH = 100;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/**
 * The mirror table's merge_selector_base (ClickHouse's default 5). Its merge selector counts a
 * fixed cost of 5 MB a part, so while parts are small it merges about every fifth insert whatever
 * their sizes: the table's tail part (or the whole table, while it is small) again with each few
 * passes' dozens of rows. 45-row inserts into a 20,000-row table merged 2,050–2,560 rows an insert
 * so; at 20, about 1,040, with twenty or so small parts live meanwhile (FINAL reads them together).
 */
const MIRROR_MERGE_SELECTOR_BASE = 20;
/**
 * The mirror table's settings (ReportingStore.createTables): its merge selector, and its cleanup
 * every second. ClickHouse deletes a table's outdated parts on a cleanup that comes every
 * `cleanup_delay_period` (30 s, plus up to 10 at random): under a flow of passes, each merge leaves
 * its parts outdated, and every 15 s or so some 450 parts (6,000 files) were deleted at once in the
 * table's directory while the passes' inserts wrote theirs there, holding them 40–160 ms. Every
 * second, each cleanup deletes a second's parts.
 */
const MIRROR_SETTINGS: Record<string, number> = {
  merge_selector_base: MIRROR_MERGE_SELECTOR_BASE,
  cleanup_delay_period: 1,
  cleanup_delay_period_random_add: 0,
  max_cleanup_delay_period: 1,
};
/** The table settings that keep a rebuild's chunks in compact parts (ReportingStore.beginCopy), and a size no part reaches. */
const COMPACT_COPY = ['min_bytes_for_wide_part', 'min_rows_for_wide_part'];
const NEVER_WIDE = '1000000000000';
/** Rows up to this size go after the INSERT's text rather than through a spool file (ReportingStore.insert). */
const INLINE_INSERT_BYTES = 256 * 1024;

/** A day's fresh transactions (FreshRows), gathered over passes. */
interface FreshSet {
  ids: Set<string>;
  from: string;
  to: string;
}

/** Changed days by tenant (`tenantKey`): each with the ids to add to its groups, or null to aggregate it again (ChangedDay). */
type ChangedTenants = Map<string, { orgId: string; environment: string; days: Map<string, FreshSet | null> }>;

function tenantKey(tenant: { orgId: string; environment: string }): string {
  return `${tenant.orgId}\u0000${tenant.environment}`;
}

/**
 * The oldest ClickHouse the mirror runs on: ReplacingMergeTree(version, is_deleted) came in 23.2,
 * `input_format_json_read_arrays_as_strings` (the feed's insert settings) in 23.9; DateTime64,
 * Map and EPHEMERAL columns are older.
 */
export const MIN_CLICKHOUSE_VERSION: readonly [number, number] = [23, 9];

/** A ClickHouse the mirror cannot use: retrying will not help, so the process stops. */
export class UnsupportedClickHouse extends Error {
  override name = 'UnsupportedClickHouse';
}

/** Whether a `version()` text (`24.8.4.13`) is at least `minimum` (major, minor). */
export function versionAtLeast(found: string, minimum: readonly [number, number]): boolean {
  const match = /^(\d+)\.(\d+)/.exec(found.trim());
  if (!match) return false;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  return major > minimum[0] || (major === minimum[0] && minor >= minimum[1]);
}

/** A server URL as it may be shown: without credentials. */
function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return '(CLICKHOUSE_URL)';
  }
}

export interface MirrorState {
  /** every transaction change visible in this Postgres snapshot is mirrored */
  position: Snapshot;
  schema: string;
}

export interface StoreTarget {
  /** what the leader lock is taken for: the data directory or the server and database */
  identity: string;
  embedded: boolean;
  /** how messages name it: the server without credentials, or the embedded directory */
  shown: string;
  /** its name among the change feed's followers (reporting/prune.ts), stored in Postgres: no credentials */
  follower: string;
}

export function storeTarget(config: Config): StoreTarget {
  if (config.clickhouseUrl) {
    const shown = shownUrl(config.clickhouseUrl);
    return { identity: `${config.clickhouseUrl}#${config.clickhouseDatabase}`, embedded: false, shown, follower: `${shown}#${config.clickhouseDatabase}` };
  }
  const dir = path.resolve(config.dataDir, 'clickhouse');
  const identity = `chdb:${dir}#${config.clickhouseDatabase}`;
  return { identity, embedded: true, shown: `embedded chdb in ${dir}`, follower: identity };
}

export class ReportingStore {
  readonly client: ClickHouseClient;
  /**
   * The connection the rollup's refresh and the position's record run on. Embedded chdb runs one
   * statement at a time a connection, in the order they come: on the passes' own connection a
   * refresh (hundreds of ms when the machine is busy) would hold back every insert queued behind
   * it, and the lag of every change committed meanwhile. Statements with parameters (the refresh's,
   * the record's, readers' queries) still take turns across connections (the chdb binding keeps
   * one queue for them); the passes' inserts carry none and run beside them. A server runs them
   * side by side on one client.
   */
  readonly #upkeepClient: ClickHouseClient;
  /**
   * The connection readers' queries (and every other read: `select`, `exportBytes`) run on. On the
   * passes' own connection an insert queued behind a reader's aggregate waits for it: in the lag
   * run at 1,000 tx/s, traced, the inserts that found a query ahead took p50 10 / p90 23 ms against
   * 6 / 8 ms for the others. On its own connection the query runs beside the insert.
   */
  readonly #queryClient: ClickHouseClient;
  readonly database: string;
  readonly table: string;
  readonly embedded: boolean;
  /** the name it follows the change feed under (StoreTarget.follower) */
  readonly follower: string;
  #lastStateWrite = 0n;
  /** the last rollup revision written (reporting/columns.ts), read from the table on first use */
  #lastRev: bigint | null = null;
  /** the rollup's days changed by passes since the running refresh began (or the last one, none running) */
  #changed: ChangedTenants = new Map();
  /**
   * the days the running refresh brings up to date, each tenant's forgotten once its statements are
   * in; null while none runs. Passes go on beside it and note their days in `#changed`.
   */
  #refreshing: ChangedTenants | null = null;
  /**
   * The rollup holds nothing past the position it was last refreshed to, so a fresh transaction may
   * be added to it. Not so after a restart (a refresh may have been cut short after its inserts) nor
   * after a failed refresh: every day is aggregated again until a refresh has completed.
   */
  #additionsExact = false;

  /** the MIRROR_SETTINGS this ClickHouse knows (system.merge_tree_settings); null until asked */
  #mirrorSettings: string[] | null = null;

  /** where embedded chdb reads inserted rows from (`insert`); null for a server */
  readonly #spool: string | null;

  constructor(client: ClickHouseClient, database: string, embedded: boolean, follower = `${embedded ? 'chdb' : 'server'}#${database}`, spool: string | null = null, upkeepClient = client, queryClient = client) {
    if (!IDENTIFIER.test(database)) throw new Error(`CLICKHOUSE_DATABASE must be an identifier, got "${database}"`);
    this.client = client;
    this.#upkeepClient = upkeepClient;
    this.#queryClient = queryClient;
    this.database = database;
    this.table = `${database}.transactions`;
    this.embedded = embedded;
    this.follower = follower;
    this.#spool = spool;
  }

  /** Refuses a ClickHouse older than MIN_CLICKHOUSE_VERSION (UnsupportedClickHouse); other errors: unreachable. */
  async checkVersion(shown: string): Promise<string> {
    const [row] = await this.select<{ version: string }>('SELECT version() AS version');
    const found = String(row?.version ?? '');
    if (!versionAtLeast(found, MIN_CLICKHOUSE_VERSION)) {
      const needed = MIN_CLICKHOUSE_VERSION.join('.');
      throw new UnsupportedClickHouse(`ClickHouse at ${shown} is version ${found || '(unknown)'}; Settle's reporting needs ClickHouse ${needed} or later `
        + '(ReplacingMergeTree(version, is_deleted), Map and DateTime64 columns, the JSON input settings of the mirror). '
        + 'Upgrade the server, or unset CLICKHOUSE_URL to use the embedded engine.');
    }
    return found;
  }

  /** Creates the database and tables; a mirror table of another shape is replaced and the position reset. */
  async ensureSchema(): Promise<{ reset: boolean }> {
    await this.command(`CREATE DATABASE IF NOT EXISTS ${this.database}`);
    await this.command(`CREATE TABLE IF NOT EXISTS ${this.database}.mirror_state (
  name String,
  snapshot String,
  schema String,
  updated_at DateTime64(6, 'UTC')
) ENGINE = ReplacingMergeTree(updated_at) ORDER BY name`);
    const state = await this.readState();
    if (state?.schema === schemaFingerprint()) {
      await this.createTables();
      return { reset: false };
    }
    // Another shape (an older release's table included): both tables anew, filled by a rebuild.
    await this.command(`DROP TABLE IF EXISTS ${this.table}`);
    await this.command(`DROP TABLE IF EXISTS ${rollupTable(this.table)}`);
    await this.createTables();
    await this.writePosition(EMPTY_SNAPSHOT);
    return { reset: true };
  }

  /**
   * Creates the mirror table `table` and its rollup unless they exist, and sets the mirror's
   * settings (MIRROR_SETTINGS) that this ClickHouse knows on the table whether new or not.
   */
  async createTables(table = this.table): Promise<void> {
    this.#mirrorSettings ??= (await this.select<{ name: string }>(
      'SELECT name FROM system.merge_tree_settings WHERE name IN {names:Array(String)}', { names: Object.keys(MIRROR_SETTINGS) })).map((row) => row.name);
    // Each `name = value`: as the CREATE and the ALTER write it, and as the table's DDL shows it.
    const settings = this.#mirrorSettings.map((setting) => `${setting} = ${MIRROR_SETTINGS[setting]}`);
    // In the CREATE too: a cleanup the table scheduled before an ALTER keeps its delay.
    await this.command(settings.length > 0 ? `${tableDdl(table)}\nSETTINGS ${settings.join(', ')}` : tableDdl(table));
    await this.command(rollupDdl(rollupTable(table)));
    if (settings.length === 0) return;
    // An ALTER takes the table's lock: only when the table does not say so already.
    const [database, name] = table.split('.');
    const [found] = await this.select<{ ddl: string }>('SELECT create_table_query AS ddl FROM system.tables WHERE database = {database:String} AND name = {name:String}', { database, name });
    const missing = settings.filter((setting) => !new RegExp(`\\b${setting}\\b`).test(found?.ddl ?? ''));
    if (missing.length === 0) return;
    await this.command(`ALTER TABLE ${table} MODIFY SETTING ${missing.join(', ')}`);
  }

  /** A rollup revision above every one written, with the next one free too (a refresh writes two). */
  async #nextRev(table: string): Promise<bigint> {
    if (this.#lastRev === null) {
      const [row] = await this.select<{ rev: string }>(`SELECT toString(max(rev)) AS rev FROM ${rollupTable(table)}`);
      this.#lastRev = BigInt(row?.rev ?? '0');
    }
    let rev = BigInt(Date.now()) * 1000n;
    if (rev <= this.#lastRev) rev = this.#lastRev + 1n;
    this.#lastRev = rev + 1n;
    return rev;
  }

  /**
   * Before a rebuild's copy into `table`: its chunks are written as compact parts (ten files each),
   * not wide ones (two files a column, 185 in all). `mergeWhole` merges them into one wide part, and
   * ClickHouse deletes the chunks' parts some 15–30 s later, by then beside the passes: 1,850 files
   * of ten wide parts at 1M rows, deleted in the table's directory while the passes' inserts wrote
   * theirs, held those inserts for 50–160 ms. Compact, the copy also cost 10–23 % less CPU.
   */
  async beginCopy(table: string): Promise<void> {
    await this.command(`ALTER TABLE ${table} MODIFY SETTING ${COMPACT_COPY.map((name) => `${name} = ${NEVER_WIDE}`).join(', ')}`);
  }

  /**
   * Merges `table` into one part (a rebuild's copy, before it goes live), in ClickHouse's own part
   * layout again. The copy writes a part a feed chunk, and ClickHouse merges them only once passes
   * insert beside them: at 1M rows that merge took one core for seconds in the first seconds of
   * flow, and the passes' inserts waited for the other. Merged here it costs the rebuild 0.8 s a
   * million rows.
   */
  async mergeWhole(table: string): Promise<void> {
    await this.command(`ALTER TABLE ${table} RESET SETTING ${COMPACT_COPY.join(', ')}`);
    await this.command(`OPTIMIZE TABLE ${table} FINAL`);
  }

  /** Fills the rollup of `table` from it, whole (after a rebuild's copy). */
  async fillRollup(table = this.table): Promise<void> {
    const rev = (await this.#nextRev(table)).toString();
    await this.client.command({ query: rollupFillSql(table, rollupTable(table)), query_params: { rev } });
    await this.client.command({ query: rollupMonthsFillSql(rollupTable(table)), query_params: { rev } });
  }

  /**
   * Notes days a pass changed: until their refresh, readers aggregate them from the mirror. A pass
   * notes its rows' days before it inserts them: a day the running refresh aggregates again reads
   * the mirror as it stands, so rows inserted meanwhile may be counted there already, and that day
   * is aggregated again after it rather than given additions.
   */
  noteChangedDays(days: readonly ChangedDay[]): void {
    for (const bucket of days) {
      const key = tenantKey(bucket);
      const tenant = this.#changed.get(key) ?? this.#changed.set(key, { orgId: bucket.orgId, environment: bucket.environment, days: new Map() }).get(key)!;
      const fresh = bucket.fresh;
      const noted = tenant.days.has(bucket.day) ? tenant.days.get(bucket.day)! : fresh && { ids: new Set<string>(), from: fresh.from, to: fresh.to };
      const reaggregating = this.#refreshing?.get(key)?.days.get(bucket.day) === null;
      if (!noted || !fresh || !this.#additionsExact || reaggregating) {
        tenant.days.set(bucket.day, null);
        continue;
      }
      for (const id of fresh.ids) noted.ids.add(id);
      if (fresh.from < noted.from) noted.from = fresh.from;
      if (fresh.to > noted.to) noted.to = fresh.to;
      tenant.days.set(bucket.day, noted);
    }
  }

  /** The days of `tenant` changed since their last refresh (the running one's included until it has written them), in order. */
  changedDays(tenant: { orgId: string; environment: string }): string[] {
    const key = tenantKey(tenant);
    const days = new Set([...(this.#changed.get(key)?.days.keys() ?? []), ...(this.#refreshing?.get(key)?.days.keys() ?? [])]);
    return [...days].sort();
  }

  /** Whether any tenant has a day changed since its last refresh, or a refresh runs (the rollup holds the position it started at once it is in). */
  get rollupTrails(): boolean {
    return this.#changed.size > 0 || this.#refreshing !== null;
  }

  /**
   * Forgets every changed day: after a rebuild (`exact`: the new rollup holds every day), or on
   * opening (the rollup may hold additions past the recorded position: days are aggregated again
   * until a refresh completes).
   */
  forgetChangedDays(options: { exact: boolean }): void {
    if (this.#refreshing) throw new Error('the rollup is being refreshed');
    this.#changed.clear();
    this.#additionsExact = options.exact;
  }

  /**
   * Brings every day changed so far up to date: fresh transactions added to their groups, other
   * days aggregated again from the mirror; then their months from their day rows. It takes the days
   * noted when it is called (passes note later ones beside it); each tenant's are forgotten once
   * its statements are in. A failure leaves every day still noted to be aggregated again: an
   * addition may have been written before it. One at a time.
   */
  async refreshRollup(): Promise<void> {
    if (this.#refreshing) throw new Error('the rollup is being refreshed');
    const refreshing = this.#changed;
    this.#changed = new Map();
    this.#refreshing = refreshing;
    try {
      const tenants = [...refreshing.entries()];
      // A statement per TENANTS_PER_REFRESH tenants keeps the SQL text short (a server refuses
      // queries over max_query_size).
      for (let from = 0; from < tenants.length; from += TENANTS_PER_REFRESH) {
        const batch = tenants.slice(from, from + TENANTS_PER_REFRESH);
        await this.#refreshTenants(batch.map(([, tenant]) => tenant));
        for (const [key] of batch) refreshing.delete(key);
      }
    } catch (error) {
      this.#additionsExact = false;
      for (const [key, tenant] of refreshing) {
        const noted = this.#changed.get(key) ?? this.#changed.set(key, { ...tenant, days: new Map() }).get(key)!;
        for (const day of tenant.days.keys()) noted.days.set(day, null);
      }
      for (const tenant of this.#changed.values()) for (const day of tenant.days.keys()) tenant.days.set(day, null);
      throw error;
    } finally {
      this.#refreshing = null;
    }
    this.#additionsExact = true;
  }

  async #refreshTenants(tenants: Array<{ orgId: string; environment: string; days: Map<string, FreshSet | null> }>): Promise<void> {
    const params = new Params();
    const bind = (type: string, value: unknown) => params.add(type, value);
    const recomputed = tenants.map((tenant) => ({ tenant, days: [...tenant.days].filter(([, ids]) => ids === null).map(([day]) => day) }))
      .filter(({ days }) => days.length > 0).map(({ tenant, days }) => rollupDays(tenant, days, bind));
    const added = tenants.map((tenant) => ({ tenant, days: [...tenant.days].filter((entry): entry is [string, FreshSet] => entry[1] !== null) }))
      .filter(({ days }) => days.length > 0).map(({ tenant, days }) => {
        const time = "DateTime64(6, 'UTC')";
        const from = days.reduce((least, [, fresh]) => (fresh.from < least ? fresh.from : least), days[0][1].from);
        const to = days.reduce((most, [, fresh]) => (fresh.to > most ? fresh.to : most), days[0][1].to);
        // The fresh rows by their time (a narrow range of the sort key), then by id.
        const rows = `created_at >= ${bind(time, from)} AND created_at <= ${bind(time, to)} AND id IN ${bind('Array(String)', days.flatMap(([, fresh]) => [...fresh.ids]))}`;
        return { days: rollupDays(tenant, days.map(([day]) => day), bind), rows };
      });
    if (added.length > 0) {
      params.values.rev = (await this.#nextRev(this.table)).toString();
      const rollupWhere = added.map(({ days }) => `(${days.tenant} AND (${days.rollup} OR ${days.months}))`).join(' OR ');
      const mirrorWhere = added.map(({ days, rows }) => `(${days.tenant} AND ${rows})`).join(' OR ');
      await this.#upkeepClient.command({ query: rollupAddSql(this.table, rollupTable(this.table), mirrorWhere, rollupWhere), query_params: params.values });
    }
    if (recomputed.length === 0) return;
    params.values.rev = (await this.#nextRev(this.table)).toString();
    const mirrorWhere = recomputed.map((days) => `(${days.tenant} AND ${days.mirror})`).join(' OR ');
    const rollupWhere = recomputed.map((days) => `(${days.tenant} AND ${days.rollup})`).join(' OR ');
    await this.#upkeepClient.command({ query: rollupRefreshSql(this.table, rollupTable(this.table), mirrorWhere, rollupWhere), query_params: params.values });
    // Their months next, from the day rows just written (added ones included); until the days are
    // forgotten, no reader reads those months.
    const monthsWhere = recomputed.map((days) => `(${days.tenant} AND ${days.months})`).join(' OR ');
    const monthsDaysWhere = recomputed.map((days) => `(${days.tenant} AND ${days.monthsDays})`).join(' OR ');
    params.values.rev = (await this.#nextRev(this.table)).toString();
    await this.#upkeepClient.command({ query: rollupMonthsRefreshSql(rollupTable(this.table), monthsWhere, monthsDaysWhere), query_params: params.values });
  }

  async readState(): Promise<MirrorState | null> {
    const rows = await this.select<{ snapshot: string; schema: string }>(
      `SELECT snapshot, schema FROM ${this.database}.mirror_state FINAL WHERE name = {name:String}`,
      { name: STATE_NAME },
    );
    const position = rows[0] ? parseSnapshot(rows[0].snapshot) : null;
    return rows[0] ? { position: position ?? EMPTY_SNAPSHOT, schema: position ? rows[0].schema : '' } : null;
  }

  async writePosition(position: Snapshot): Promise<void> {
    // ReplacingMergeTree keeps the latest `updated_at`; make it strictly increasing within this process.
    let stamp = BigInt(Date.now()) * 1000n;
    if (stamp <= this.#lastStateWrite) stamp = this.#lastStateWrite + 1n;
    this.#lastStateWrite = stamp;
    await this.#upkeepClient.command({
      query: `INSERT INTO ${this.database}.mirror_state (name, snapshot, schema, updated_at)
VALUES ({name:String}, {snapshot:String}, {schema:String}, fromUnixTimestamp64Micro({stamp:Int64}, 'UTC'))`,
      query_params: { name: STATE_NAME, snapshot: formatSnapshot(position), schema: schemaFingerprint(), stamp: stamp.toString() },
    });
  }

  /** Inserts feed lines of a shape (reporting/columns.ts). */
  async insertLines(lines: string[], table = this.table, shape: FeedShape = 'data'): Promise<void> {
    if (lines.length === 0) return;
    // One join: the rows as one flat string, written or sent as it is.
    await this.insert((source) => insertStatement(table, source, shape), [...lines, ''].join('\n'));
  }

  /**
   * Runs an INSERT of `rows`, text in the statement's FORMAT. `statement(source)` is the INSERT
   * with `source` put after its column list. A server takes the rows after the statement, as its
   * HTTP interface reads them. Embedded chdb reads them from a spool file (` FROM INFILE`): rows
   * after the statement text cost chdb about 7 ns a byte before it parsed them, whatever the
   * format, even into a Null table. Measured on 400,000 feed rows (141 MB): stored as lines alone,
   * 0.81–0.96 CPU s after the statement against 0.27–0.29 from a file, writing it included; into
   * the mirror table, 1.8–2.5 against 1.2–1.7. A small insert (a pass's tail of a few hundred
   * rows) goes after the statement all the same: creating, writing and removing a file cost more
   * than chdb's pass over its bytes (100 rows, 25 kB: 13–15.6 ms of CPU an insert inline against
   * 16.6–21 ms spooled, load 17).
   */
  async insert(statement: (source: string) => string, rows: string | Buffer): Promise<void> {
    if (!this.#spool || rows.length <= INLINE_INSERT_BYTES) {
      await this.client.command({ query: `${statement('')}\n${rows.toString()}` });
      return;
    }
    const file = path.join(this.#spool, `${++spooled}.rows`);
    try {
      await fs.promises.writeFile(file, rows);
      await this.client.command({ query: statement(` FROM INFILE '${file.replace(/[\\']/g, '\\$&')}'`) });
    } finally {
      await fs.promises.rm(file, { force: true });
    }
  }

  async select<T>(query: string, params: Record<string, unknown> = {}): Promise<T[]> {
    const result = await this.#queryClient.query({ query, query_params: params, format: 'JSONEachRow' });
    return (await result.json()) as T[];
  }

  /** A query's whole answer in a binary format named in its FORMAT clause (a Parquet export). */
  async exportBytes(query: string, params: Record<string, unknown> = {}): Promise<Buffer> {
    const result = await this.#queryClient.exec({ query, query_params: params });
    const chunks: Buffer[] = [];
    for await (const chunk of result.stream as AsyncIterable<Buffer | Uint8Array>) chunks.push(Buffer.from(chunk));
    return Buffer.concat(chunks);
  }

  async command(query: string): Promise<void> {
    await this.client.command({ query });
  }

  async close(): Promise<void> {
    await this.client.close();
    if (this.#upkeepClient !== this.client) await this.#upkeepClient.close();
    if (this.#queryClient !== this.client) await this.#queryClient.close();
  }
}

/** Spool files this process has written: each insert's file has a name of its own, whichever store writes it. */
let spooled = 0;

/**
 * This process's spool directory (`ReportingStore.insert`), `<root>/<pid>`. What a stopped process
 * left there (an insert it did not finish) is removed; a running process's directory is left alone,
 * even if it holds the store and this process is about to find that out.
 */
function openSpool(root: string): string {
  fs.mkdirSync(root, { recursive: true });
  for (const entry of fs.readdirSync(root)) {
    const pid = /^\d+$/.test(entry) ? Number(entry) : null;
    if (pid !== null && running(pid)) continue;
    fs.rmSync(path.join(root, entry), { recursive: true, force: true });
  }
  const spool = path.join(root, String(process.pid));
  fs.mkdirSync(spool, { recursive: true });
  return spool;
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function openStore(config: Config): ReportingStore {
  if (config.clickhouseUrl) {
    // Credentials in CLICKHOUSE_URL win over CLICKHOUSE_USER/PASSWORD, and leave the URL.
    const url = new URL(config.clickhouseUrl);
    const username = url.username ? decodeURIComponent(url.username) : config.clickhouseUser;
    const password = url.password ? decodeURIComponent(url.password) : config.clickhousePassword;
    url.username = '';
    url.password = '';
    const client = createClient({
      url: url.toString(),
      username,
      password,
      request_timeout: 60_000,
      // Failures reach our own log, once per outage (reporting/failures.ts), not a line per request.
      log: { level: ClickHouseLogLevel.OFF },
    });
    return new ReportingStore(client, config.clickhouseDatabase, false, storeTarget(config).follower);
  }
  const dir = path.join(config.dataDir, 'clickhouse');
  fs.mkdirSync(dir, { recursive: true });
  const spool = openSpool(path.join(config.dataDir, 'clickhouse-spool'));
  // The connection hook is typed against @clickhouse/client-common's Connection; the two packages pin it separately.
  // Connections at one path share the engine and its tables, each running its own statements.
  const connect = () => createClient({ connection: createChdbConnection({ path: dir }), log: { level: ClickHouseLogLevel.OFF } } as Parameters<typeof createClient>[0]);
  return new ReportingStore(connect(), config.clickhouseDatabase, true, storeTarget(config).follower, spool, connect(), connect());
}
