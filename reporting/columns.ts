/**
 * The mirrored shape of a transaction, derived from the family declaration: one ClickHouse column
 * per scalar field the query language can address, `attrs` as Map(String, String), plus tenant,
 * version and the deleted flag. The DDL, the Postgres feed and the compiler's field lookup all
 * come from here, so they cannot drift apart.
 *
 * Division of work, for backfill speed: Postgres sends each changed row as a short JSON array
 * (tenant, id, type, timestamps, version, deleted flag, and the `data` document as stored);
 * ClickHouse's JSON parser reads `data` into an EPHEMERAL named tuple and each column's DEFAULT
 * takes its value from there. The values are those the Postgres compiler reads with
 * `data #>> path`: strings as strings, any other JSON value as its JSON text, missing or null as
 * NULL; numbers and money only when they parse (as Postgres would cast them).
 *
 * A pass (the feed's tail, a few dozen rows) sends those values instead (`pgRowJson('derived')`):
 * Postgres reads them as `#>>` does, with the same patterns, and the INSERT
 * names every column, so ClickHouse parses no document and computes no DEFAULT. Both shapes give
 * the same row (test/reporting-feed-shapes.test.ts).
 */
import { createHash } from 'node:crypto';
import { COLUMNS, type FieldSpec, type FieldType } from '../api/engine/family.ts';
import { transactionShape } from '../api/families/transactions/fields.ts';

export interface MirrorColumn {
  /** ClickHouse column name */
  name: string;
  chType: string;
  field?: FieldSpec;
}

export const ATTRS_STORE = 'attrs';

/** Values the query language never addresses as a whole (free-form json, lists) are not mirrored. */
const UNMIRRORED_TYPES = new Set<FieldType>(['json', 'list']);
const INTEGER = `'^-?[0-9]{1,18}$'`;
const NUMBER = `'^-?[0-9]+(\\\\.[0-9]+)?([eE][-+]?[0-9]+)?$'`;

export function columnName(store: string): string {
  return store.replace(/\./g, '_');
}

function mirroredFields(): FieldSpec[] {
  const seen = new Set<string>();
  return transactionShape.fields.filter((field) => {
    if (field.writeOnly || UNMIRRORED_TYPES.has(field.type) || seen.has(field.store)) return false;
    seen.add(field.store);
    return true;
  });
}

const FIELDS = mirroredFields();
const DATA_FIELDS = FIELDS.filter((field) => !COLUMNS.has(field.store));

/** Keys of `data` whose value must be an object for the tuple read (nested fields' parents, attrs). */
const OBJECT_KEYS = [...new Set([...DATA_FIELDS.filter((f) => f.store.includes('.')).map((f) => f.store.split('.')[0]), ATTRS_STORE])];

// ---------- ClickHouse ----------

/** The named tuple ClickHouse reads `data` into: every leaf as text, attrs as a map. */
function dataTupleType(): string {
  interface Node { [key: string]: Node | null }
  const tree: Node = {};
  for (const field of DATA_FIELDS) {
    const path = field.store.split('.');
    let node = tree;
    for (const key of path.slice(0, -1)) node = (node[key] ??= {}) as Node;
    node[path[path.length - 1]] = null;
  }
  const render = (node: Node): string => `Tuple(${Object.entries(node).map(([key, child]) => `${key} ${child ? render(child) : 'Nullable(String)'}`).join(', ')})`;
  return render({ ...tree, [ATTRS_STORE]: null }).replace(`${ATTRS_STORE} Nullable(String)`, `${ATTRS_STORE} Map(String, Nullable(String))`);
}

function dataText(store: string): string {
  return store.split('.').reduce((sql, key) => `tupleElement(${sql}, '${key}')`, 'data');
}

function derivedColumn(field: FieldSpec): { chType: string; value: string } {
  const text = dataText(field.store);
  switch (field.type) {
    case 'money':
      return { chType: 'Nullable(Int64)', value: `if(match(ifNull(${text}, ''), ${INTEGER}), toInt64OrNull(${text}), NULL)` };
    case 'integer':
    case 'number':
      return { chType: 'Nullable(Float64)', value: `if(match(ifNull(${text}, ''), ${NUMBER}), toFloat64OrNull(${text}), NULL)` };
    case 'boolean':
      return { chType: 'Nullable(Bool)', value: `multiIf(${text} = 'true', true, ${text} = 'false', false, NULL)` };
    case 'datetime':
      throw new Error(`reporting: datetime field ${field.store} stored in data is not supported`);
    default:
      return { chType: field.enum ? 'LowCardinality(Nullable(String))' : 'Nullable(String)', value: text };
  }
}

const COLUMN_TYPES: Record<string, string> = {
  id: 'String',
  type: 'LowCardinality(String)',
  created_at: "DateTime64(6, 'UTC')",
  modified_at: "DateTime64(6, 'UTC')",
};

/**
 * What a feed line carries after its row's own columns: the `data` document, from which the
 * table's DEFAULTs derive the other columns (a rebuild: Postgres spends the least a row), or each
 * derived column's value, computed by Postgres (a pass: ClickHouse's insert costs the least).
 */
export type FeedShape = 'data' | 'derived';

const ROW_COLUMNS = ['org_id', 'environment', 'id', 'type', 'created_at', 'modified_at', 'version', 'is_deleted'];

/** The columns Postgres sends in each shape, in the order of its JSON array. */
export const FEED_COLUMNS: Record<FeedShape, readonly string[]> = {
  data: [...ROW_COLUMNS, 'data'],
  derived: [...ROW_COLUMNS, ...DATA_FIELDS.map((field) => columnName(field.store)), ATTRS_STORE],
};

/** Every queryable column of the mirror table. */
export const MIRROR_COLUMNS: MirrorColumn[] = [
  // Every query filters on the tenant: as LowCardinality the filter compares dictionary positions,
  // not texts (a third of a tenant-wide aggregate's CPU time at 900k rows).
  { name: 'org_id', chType: 'LowCardinality(String)' },
  { name: 'environment', chType: 'LowCardinality(String)' },
  ...FIELDS.filter((f) => COLUMNS.has(f.store)).map((field) => ({ name: field.store, chType: COLUMN_TYPES[field.store], field })),
  ...DATA_FIELDS.map((field) => ({ name: columnName(field.store), chType: derivedColumn(field).chType, field })),
  { name: 'attrs', chType: 'Map(String, String)' },
  { name: 'version', chType: 'UInt64' },
  { name: 'is_deleted', chType: 'UInt8' },
];

/** Mirrored columns by the field's storage path (`sender.account_id`). */
export const COLUMN_BY_STORE = new Map(MIRROR_COLUMNS.filter((c) => c.field).map((c) => [c.field!.store, c]));

/**
 * Settings of the statements that read the mirror and the rollup: a reader's query and the
 * rollup's refresh. Their parts' files are read on the calling thread (`pread`), not handed to
 * ClickHouse's reader pool (`pread_threadpool`, its default for local disks): for the few granules
 * such a statement reads, mostly in the page cache, the pool's hand-offs cost more than they save.
 * `bench:reporting-reads`, a 1M-row mirror with today's rows still to be rolled up: a reader's
 * count 21–22 against 25–26 CPU ms in this disk's ext4 page cache, 24–27 against 36–42 on tmpfs
 * (where the pool's probe of the page cache fails and the pool takes every read).
 */
export const READ_SETTINGS = "local_filesystem_read_method = 'pread'";

/**
 * The mirror table's DDL. Any change to it changes `schemaFingerprint`, which triggers a rebuild.
 * Not partitioned: a backfill's chunk spans every month of the data, and a part per month per
 * insert cost a 1M-row rebuild 16.0–16.7 CPU s against 12.3–13.0 unpartitioned (and three times
 * the wall time while the parts were written); queries find their range by the sort key anyway.
 */
export function tableDdl(table: string): string {
  const plain = MIRROR_COLUMNS.filter((c) => !c.field || COLUMNS.has(c.field.store)).filter((c) => c.name !== 'attrs');
  const lines = [
    ...plain.map((c) => `${c.name} ${c.chType}`),
    `data ${dataTupleType()} EPHEMERAL`,
    ...DATA_FIELDS.map((field) => {
      const { chType, value } = derivedColumn(field);
      return `${columnName(field.store)} ${chType} DEFAULT ${value}`;
    }),
    `attrs Map(String, String) DEFAULT CAST(mapFilter((k, v) -> v IS NOT NULL, tupleElement(data, '${ATTRS_STORE}')), 'Map(String, String)')`,
  ];
  return `CREATE TABLE IF NOT EXISTS ${table} (\n  ${lines.join(',\n  ')}\n)
ENGINE = ReplacingMergeTree(version, is_deleted)
ORDER BY (org_id, environment, created_at, id)`;
}

/**
 * How the feed's JSON text is read: every JSON value a text column meets is taken as its text.
 * Insert blocks are not deduplicated on the way in (`optimize_on_insert = 0`: a feed chunk holds one
 * row per transaction, and FINAL and merges collapse versions anyway), and are parsed on the
 * inserting thread (`input_format_parallel_parsing = 0`): each saved about a fifth of the CPU of a
 * 100,000-row insert on a two-core machine. `source` is where the rows come from when they do not
 * follow the statement (` FROM INFILE '…'`: ReportingStore.insert).
 */
export function insertStatement(table: string, source = '', shape: FeedShape = 'data'): string {
  return `INSERT INTO ${table} (${FEED_COLUMNS[shape].join(', ')})${source}
SETTINGS optimize_on_insert = 0, input_format_parallel_parsing = 0, input_format_json_read_numbers_as_strings = 1, input_format_json_read_bools_as_strings = 1,
  input_format_json_read_objects_as_strings = 1, input_format_json_read_arrays_as_strings = 1,
  input_format_json_named_tuples_as_objects = 1, input_format_json_ignore_unknown_keys_in_named_tuple = 1,
  input_format_json_defaults_for_missing_elements_in_named_tuple = 1, input_format_null_as_default = 1
FORMAT JSONCompactEachRow`;
}

// ---------- Postgres ----------

/**
 * A UTC time as `YYYY-MM-DD HH:MM:SS[.ffffff]`: the timestamp's own text output, a third of the
 * cost of to_char. It is that form under DateStyle ISO, which the feed's transaction sets
 * (FEED_SESSION).
 */
function pgTimestamp(sql: string): string {
  return `(${sql} at time zone 'UTC')::text`;
}

/** Select-list calls that set, for the feed's transaction only, what pgRowJson's text relies on. */
export const FEED_SESSION = "set_config('DateStyle', 'ISO', true)";

/**
 * `data` as stored, except a key the tuple reads as an object but that holds something else is
 * dropped: Postgres reads `data #>> '{sender,account_id}'` under a string `sender` as NULL too.
 */
function pgData(): string {
  const odd = (k: string) => `jsonb_typeof(t.data -> '${k}') <> 'object'`;
  // array_remove over CASEs rather than a subquery: a SubPlan here doubles the cost of the whole feed.
  const drop = OBJECT_KEYS.map((k) => `case when ${odd(k)} then '${k}' end`).join(', ');
  return `case when jsonb_typeof(t.data) <> 'object' then null
      when ${OBJECT_KEYS.map(odd).join(' or ')} then t.data - array_remove(array[${drop}], null)
      else t.data end`;
}

/** INTEGER and NUMBER for Postgres (its regular expressions read these patterns as RE2 does). */
const PG_INTEGER = `'^-?[0-9]{1,18}$'`;
const PG_NUMBER = `'^-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?$'`;

/**
 * A derived column's value as JSON text (`null` for NULL), as its DEFAULT would compute it from the
 * `data` document: `->>` (under `->` for a nested field) gives what `#>>` and the tuple read give
 * (strings unquoted, any other value as jsonb's text of it, NULL under a parent that is not an
 * object or a `data` that is not one), for less than `#>>`'s path array costs.
 * Money goes as the integer; numbers as their text, parsed by ClickHouse as toFloat64OrNull does.
 */
function pgDerived(field: FieldSpec): string {
  const keys = field.store.split('.');
  const text = `(t.data${keys.slice(0, -1).map((key) => ` -> '${key}'`).join('')} ->> '${keys.at(-1)}')`;
  switch (field.type) {
    case 'money':
      return `case when ${text} ~ ${PG_INTEGER} then (${text})::bigint::text else 'null' end`;
    case 'integer':
    case 'number':
      return `case when ${text} ~ ${PG_NUMBER} then to_json(${text})::text else 'null' end`;
    case 'boolean':
      return `case ${text} when 'true' then 'true' when 'false' then 'false' else 'null' end`;
    default:
      return `coalesce(to_json(${text})::text, 'null')`;
  }
}

/**
 * `attrs` without its null values (the DEFAULT's mapFilter), `{}` when it is not an object. The
 * object itself when no value in it is null (jsonb_strip_nulls leaves it equal): a scalar subquery
 * a row cost Postgres about as much as the other columns together.
 */
const PG_ATTRS_OBJECT = `(t.data -> '${ATTRS_STORE}')`;
const PG_ATTRS = `case when jsonb_typeof(${PG_ATTRS_OBJECT}) is distinct from 'object' then '{}'
        when jsonb_strip_nulls(${PG_ATTRS_OBJECT}) = ${PG_ATTRS_OBJECT} then ${PG_ATTRS_OBJECT}::text
        else coalesce((select jsonb_object_agg(a.key, a.value) from jsonb_each(${PG_ATTRS_OBJECT}) a where jsonb_typeof(a.value) <> 'null')::text, '{}') end`;

/**
 * The Postgres expression producing one JSONCompactEachRow line per change row (`c` joined to `t`),
 * put together as text: cheaper than json_build_array. Tenant and id are JSON-quoted; the type is a
 * checked word; timestamps are digits; `data` is jsonb's own JSON text.
 */
export function pgRowJson(shape: FeedShape = 'data'): string {
  const rest = shape === 'data' ? `coalesce((${pgData()})::text, 'null')` : [...DATA_FIELDS.map(pgDerived), PG_ATTRS].join(`
      || ',' || `);
  return `'[' || to_json(c.org_id)::text || ',' || to_json(c.environment)::text || ',' || to_json(c.transaction_id)::text || ',"' || coalesce(t.type, '') || '","'
      || ${pgTimestamp('c.created_at')} || '","' || ${pgTimestamp('coalesce(t.modified_at, c.changed_at)')} || '",'
      || c.version || ',' || (c.deleted or t.id is null)::int || ','
      || ${rest} || ']'`;
}

export function schemaFingerprint(): string {
  const hash = createHash('sha256').update(tableDdl('t')).update(rollupDdl('r')).update(rollupSelect('t', 'all'));
  for (const shape of ['data', 'derived'] as const) hash.update(insertStatement('t', '', shape)).update(pgRowJson(shape));
  return hash.digest('hex').slice(0, 16);
}

// ---------- the rollup ----------

/**
 * The rollup: the mirror pre-aggregated by tenant, UTC day of `created_at` and a few low-cardinality
 * dimensions, with partial aggregates (count, sum, sum of squares, min, max) of every money field.
 * A 1M-row tenant spread over two years is some 40k rollup rows, so the typical groupings (by
 * type, status, currency, month or day) read those instead of every transaction. The query
 * compiler chooses it (reporting/report.ts) when a query's fields, filters and groupings are all
 * covered; anything else reads the mirror.
 *
 * It is kept exact at most once a second while changes flow (ReportingStore.refreshRollup), each
 * (tenant, day) passes changed in one of two ways. Where every changed transaction was inserted
 * after the rollup's position, they are added to the groups of their days and months
 * (rollupAddSql): a cost of what changed. Elsewhere (an update or deletion of a transaction the
 * rollup may count) the day is aggregated again from the mirror's FINAL view, in one INSERT that
 * also writes a deletion for each group of those days (the newer rows win over them, so only
 * groups that vanished stay deleted), and its months from its day rows. ReplacingMergeTree(rev,
 * is_deleted): FINAL reads the latest. Until a changed day is refreshed, a query reads that day
 * from the mirror (rollupWithDaysSql).
 */
export interface RollupMeasure {
  count: string;
  sum: string;
  squares: string;
  min: string;
  max: string;
}

export interface Rollup {
  /** the grain of its rows: each day, or each month (its first day in the day column) */
  grain: { column: string; value: number; name: 'day' | 'month' };
  /** the functions of the kept time whose value its grain decides (over a day: its year, weekday, date…) */
  timeFunctions: ReadonlySet<string>;
  /**
   * a coarser grain of the same table, read instead when it covers the query and none of the
   * tenant's days trails (with one, the trailing day's rows from the mirror cost more than the
   * finer grain's rows: 36 against 32 ms of CPU for one day at 1M)
   */
  coarser?: Rollup;
  /** stored field → its column, for the dimensions */
  dimensions: ReadonlyMap<string, { name: string }>;
  /** the datetime field kept by day, and the Date32 column it is kept in */
  day: { store: string; column: string };
  /** money field (stored) → its partial columns */
  measures: ReadonlyMap<string, RollupMeasure>;
  /** the column counting a group's transactions */
  rows: string;
}

const ROLLUP_DIMENSION_FIELDS = ['type', 'status', 'currency'];

/** The functions of a time whose value depends only on its UTC month. */
const MONTH_FUNCTIONS = new Set(['year', 'month', 'monthname', 'last_day']);

/** The rollup by month: the day rows of each month summed into one. A tenant's two years are some 1,400 rows. */
const ROLLUP_MONTHS: Rollup = {
  grain: { column: 'grain', value: 1, name: 'month' },
  timeFunctions: MONTH_FUNCTIONS,
  dimensions: new Map(ROLLUP_DIMENSION_FIELDS.map((store) => [store, { name: COLUMN_BY_STORE.get(store)!.name }])),
  day: { store: 'created_at', column: 'day' },
  measures: new Map(MIRROR_COLUMNS.filter((c) => c.field?.type === 'money').map((c) => [c.field!.store, {
    count: `${c.name}_count`, sum: `${c.name}_sum`, squares: `${c.name}_squares`, min: `${c.name}_min`, max: `${c.name}_max`,
  }])),
  rows: 'n',
};

/** The rollup by day, with its month rows in the same table (`grain`). */
export const ROLLUP: Rollup = {
  ...ROLLUP_MONTHS,
  grain: { column: 'grain', value: 0, name: 'day' },
  timeFunctions: new Set([...MONTH_FUNCTIONS, 'day', 'dayname', 'dayofweek', 'dayofyear', 'weekofyear', 'date']),
  coarser: ROLLUP_MONTHS,
};

/** The rollup table of a mirror table. */
export function rollupTable(table: string): string {
  return `${table}_rollup`;
}

const GRAIN = ROLLUP.grain.column;

// The tenant's rows of one grain are one range of the key: a query reads them alone.
const ROLLUP_KEY = ['org_id', 'environment', GRAIN, ROLLUP.day.column, ...[...ROLLUP.dimensions.values()].map((d) => d.name)];

/**
 * Each rollup column: its value over the mirror's rows of a day group, in a deletion, and over the
 * day rows of a month (`ofDays`, with `day` already the month's first day).
 */
function rollupColumns(): Array<{ name: string; chType: string; fromMirror: string; empty: string; ofDays: string }> {
  const dimensions = [...ROLLUP.dimensions.entries()].map(([store, { name }]) => ({ name, chType: COLUMN_BY_STORE.get(store)!.chType, fromMirror: name, empty: name, ofDays: name }));
  const measures = [...ROLLUP.measures.entries()].flatMap(([store, m]) => {
    const x = COLUMN_BY_STORE.get(store)!.name;
    return [
      { name: m.count, chType: 'UInt64', fromMirror: `count(${x})`, empty: '0', ofDays: `sum(${m.count})` },
      { name: m.sum, chType: 'Int64', fromMirror: `sum(ifNull(${x}, 0))`, empty: '0', ofDays: `sum(${m.sum})` },
      { name: m.squares, chType: 'Int128', fromMirror: `sum(toInt128(ifNull(${x}, 0)) * ifNull(${x}, 0))`, empty: '0', ofDays: `sum(${m.squares})` },
      { name: m.min, chType: 'Nullable(Int64)', fromMirror: `min(${x})`, empty: 'NULL', ofDays: `min(${m.min})` },
      { name: m.max, chType: 'Nullable(Int64)', fromMirror: `max(${x})`, empty: 'NULL', ofDays: `max(${m.max})` },
    ];
  });
  return [
    { name: 'org_id', chType: 'LowCardinality(String)', fromMirror: 'org_id', empty: 'org_id', ofDays: 'org_id' },
    { name: 'environment', chType: 'LowCardinality(String)', fromMirror: 'environment', empty: 'environment', ofDays: 'environment' },
    { name: GRAIN, chType: 'UInt8', fromMirror: String(ROLLUP.grain.value), empty: GRAIN, ofDays: String(ROLLUP.coarser!.grain.value) },
    { name: ROLLUP.day.column, chType: 'Date32', fromMirror: `toDate32(${ROLLUP.day.store})`, empty: ROLLUP.day.column, ofDays: ROLLUP.day.column },
    ...dimensions,
    { name: ROLLUP.rows, chType: 'UInt64', fromMirror: 'count()', empty: '0', ofDays: `sum(${ROLLUP.rows})` },
    ...measures,
  ];
}

/** Every column of the rollup table, in order. */
function rollupNames(): string {
  return [...rollupColumns().map((c) => c.name), 'rev', 'is_deleted'].join(', ');
}

export function rollupDdl(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table} (
  ${rollupColumns().map((c) => `${c.name} ${c.chType}`).join(',\n  ')},
  rev UInt64,
  is_deleted UInt8
) ENGINE = ReplacingMergeTree(rev, is_deleted)
ORDER BY (${ROLLUP_KEY.join(', ')})
SETTINGS allow_nullable_key = 1, index_granularity = 1024`;
}

/** The rollup's day groups aggregated from the mirror's FINAL view: of every day (`all`), or where `{where}` (text) holds. */
export function rollupSelect(mirror: string, scope: 'all' | { where: string }, rev = '{rev:UInt64}'): string {
  const columns = rollupColumns();
  return `SELECT ${columns.map((c) => (c.fromMirror === c.name ? c.name : `${c.fromMirror} AS ${c.name}`)).join(', ')}, ${rev} AS rev, 0 AS is_deleted
FROM ${mirror} FINAL${scope === 'all' ? '' : `\nWHERE ${scope.where}`}
GROUP BY ${ROLLUP_KEY.join(', ')}`;
}

/** The month groups of `days`, a query giving day rows of the rollup (every column, in order). */
export function rollupMonthsSelect(days: string, rev = '{rev:UInt64}'): string {
  const columns = rollupColumns();
  return `SELECT ${columns.map((c) => (c.ofDays === c.name ? c.name : `${c.ofDays} AS ${c.name}`)).join(', ')}, ${rev} AS rev, 0 AS is_deleted
FROM (SELECT * REPLACE (toStartOfMonth(${ROLLUP.day.column}) AS ${ROLLUP.day.column}) FROM (${days}))
GROUP BY ${ROLLUP_KEY.join(', ')}`;
}

/** The day rows of the rollup where `where` holds, latest versions. */
function storedDays(rollup: string, where: string): string {
  return `SELECT ${rollupNames()} FROM ${rollup} FINAL WHERE ${GRAIN} = ${ROLLUP.grain.value} AND ${where}`;
}

/**
 * A tenant's rollup as it would stand with `days` recomputed: its stored groups of every other day,
 * and those days' groups aggregated from the mirror now. A reader reads its own writes through it
 * without waiting for a recompute (nor writing one), for the price of aggregating the days that
 * trail the mirror (today's, mostly).
 */
export function rollupWithDaysSql(mirror: string, rollup: string, days: RollupDays): string {
  return `${storedDays(rollup, `${days.tenant} AND NOT ${days.rollup}`)}
UNION ALL
${rollupSelect(mirror, { where: `${days.tenant} AND ${days.mirror}` }, '0')}`;
}

/** Binds a value as a typed query parameter and gives its placeholder (`{p0:String}`). */
export type Bind = (type: string, value: unknown) => string;

/**
 * A tenant's days: the tenant's condition, and the days as a condition over the mirror and over
 * the rollup's day rows; their months as a condition over the month rows and over the day rows.
 */
export interface RollupDays {
  tenant: string;
  mirror: string;
  rollup: string;
  months: string;
  monthsDays: string;
}

/** The time range lets the mirror's sort key find the days' rows; the list keeps only the days themselves. */
export function rollupDays(tenant: { orgId: string; environment: string }, days: readonly string[], bind: Bind): RollupDays {
  const sorted = [...new Set(days)].sort();
  const after = (day: string, months: number): string => {
    const next = new Date(`${day}T00:00:00Z`);
    if (months === 0) next.setUTCDate(next.getUTCDate() + 1);
    else next.setUTCMonth(next.getUTCMonth() + months, 1);
    return next.toISOString().slice(0, 10);
  };
  const list = bind('Array(Date32)', sorted);
  const months = [...new Set(sorted.map((day) => `${day.slice(0, 7)}-01`))];
  const monthList = bind('Array(Date32)', months);
  const time = "DateTime64(6, 'UTC')";
  const day = ROLLUP.day.column;
  return {
    tenant: `org_id = ${bind('String', tenant.orgId)} AND environment = ${bind('String', tenant.environment)}`,
    mirror: `(created_at >= ${bind(time, `${sorted[0]} 00:00:00`)} AND created_at < ${bind(time, `${after(sorted.at(-1)!, 0)} 00:00:00`)} AND toDate32(created_at) IN ${list})`,
    rollup: `(${GRAIN} = ${ROLLUP.grain.value} AND ${day} IN ${list})`,
    months: `(${GRAIN} = ${ROLLUP.coarser!.grain.value} AND ${day} IN ${monthList})`,
    monthsDays: `(${GRAIN} = ${ROLLUP.grain.value} AND ${day} >= ${bind('Date32', months[0])} AND ${day} < ${bind('Date32', after(months.at(-1)!, 1))}`
      + ` AND toStartOfMonth(${day}) IN ${monthList})`,
  };
}

/** The whole rollup's day rows from the mirror (a rebuild); `rollupMonthsFillSql` adds its months. */
export function rollupFillSql(mirror: string, rollup: string): string {
  return `INSERT INTO ${rollup} (${rollupNames()})
${rollupSelect(mirror, 'all')}`;
}

/** The whole rollup's month rows from its day rows (after `rollupFillSql`). */
export function rollupMonthsFillSql(rollup: string): string {
  return `INSERT INTO ${rollup} (${rollupNames()})
${rollupMonthsSelect(storedDays(rollup, '1'))}`;
}

/** Deletions at `{rev}` for each group of the rollup where `where` holds now. */
function rollupDeletions(rollup: string, where: string): string {
  const columns = rollupColumns();
  return `SELECT ${columns.map((c) => (c.empty === c.name ? c.name : `${c.empty} AS ${c.name}`)).join(', ')}, {rev:UInt64} AS rev, 1 AS is_deleted
FROM ${rollup} FINAL
WHERE ${where}`;
}

/**
 * The days named by `mirrorWhere` (over the mirror) and `rollupWhere` (the same days, over the
 * rollup) again: a deletion at `{rev}` for each group they hold now, their groups as they stand at
 * `{rev}` + 1. One statement, so nobody reads a day half done.
 */
export function rollupRefreshSql(mirror: string, rollup: string, mirrorWhere: string, rollupWhere: string): string {
  return `INSERT INTO ${rollup} (${rollupNames()})
${rollupDeletions(rollup, rollupWhere)}
UNION ALL
${rollupSelect(mirror, { where: mirrorWhere }, '{rev:UInt64} + 1')}
SETTINGS ${READ_SETTINGS}`;
}

/**
 * Fresh transactions (inserted after the rollup's position, so counted in none of its groups)
 * added to their days' and months' groups, in one statement: each group where `rollupWhere` holds
 * (day and month rows of the rollup) combined with the groups of the mirror's rows where
 * `mirrorWhere` holds (those transactions, latest versions), aggregated by day and by month,
 * written at `{rev}`. Counts and sums add up; minimum and maximum take the lesser and the greater:
 * nothing leaves a group, so every partial stays exact. A recompute costs what the day holds; this
 * costs what changed.
 */
export function rollupAddSql(mirror: string, rollup: string, mirrorWhere: string, rollupWhere: string): string {
  const columns = rollupColumns();
  const parts = columns.map((c) => c.name).join(', ');
  const month = ROLLUP.coarser!.grain.value;
  // Each fresh day group counts in its month's group too: the same row again with the month's grain and first day.
  const grains = `SELECT ${columns.map((c) => (c.name === GRAIN ? `g AS ${GRAIN}` : c.name === ROLLUP.day.column ? `if(g = ${month}, toStartOfMonth(${c.name}), ${c.name}) AS ${c.name}` : c.name)).join(', ')}
  FROM (${rollupSelect(mirror, { where: mirrorWhere }, '0')}) ARRAY JOIN [${ROLLUP.grain.value}, ${month}] AS g`;
  return `INSERT INTO ${rollup} (${rollupNames()})
SELECT ${columns.map((c) => (ROLLUP_KEY.includes(c.name) ? c.name : `${c.ofDays} AS ${c.name}`)).join(', ')}, {rev:UInt64} AS rev, 0 AS is_deleted
FROM (SELECT ${parts} FROM ${rollup} FINAL WHERE is_deleted = 0 AND (${rollupWhere})
  UNION ALL
  ${grains})
GROUP BY ${ROLLUP_KEY.join(', ')}
SETTINGS ${READ_SETTINGS}`;
}

/**
 * The months named by `monthsWhere` (their month rows) and `monthsDaysWhere` (their day rows)
 * again from their day rows, after those days' own recompute: a deletion at `{rev}` for each month
 * group, the groups anew at `{rev}` + 1. Readers read no month with a day not yet recomputed, so
 * the months may follow the days in a statement of their own, which reads the rollup alone.
 */
export function rollupMonthsRefreshSql(rollup: string, monthsWhere: string, monthsDaysWhere: string): string {
  return `INSERT INTO ${rollup} (${rollupNames()})
${rollupDeletions(rollup, monthsWhere)}
UNION ALL
${rollupMonthsSelect(storedDays(rollup, `(${monthsDaysWhere})`), '{rev:UInt64} + 1')}
SETTINGS ${READ_SETTINGS}`;
}
