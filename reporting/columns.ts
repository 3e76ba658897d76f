/**
 * The mirrored shape of a transaction, derived from the family declaration: one ClickHouse column
 * per scalar field the query language can address, `attrs` as Map(String, String), plus tenant,
 * version and the deleted flag. The DDL, the Postgres expression that feeds each column and the
 * compiler's field lookup all come from this one list, so they cannot drift apart.
 */
import { createHash } from 'node:crypto';
import { COLUMNS, type FieldSpec, type FieldType } from '../api/engine/family.ts';
import { transactions } from '../api/families/transactions/family.ts';

export interface MirrorColumn {
  /** ClickHouse column name */
  name: string;
  chType: string;
  /** Postgres expression over `t` (transactions) and `c` (reporting_changes) giving the column's JSON value */
  pgValue: string;
  field?: FieldSpec;
}

/** Values the query language never addresses as a whole (free-form json, lists) are not mirrored. */
const UNMIRRORED_TYPES = new Set<FieldType>(['json', 'list']);
const NUMBER = `'^-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?$'`;
const INTEGER = `'^-?[0-9]{1,18}$'`;

export function columnName(store: string): string {
  return store.replace(/\./g, '_');
}

function storePath(store: string): string {
  return `'{${store.split('.').join(',')}}'`;
}

/** Text of a stored field exactly as the Postgres compiler reads it (`data #>> path`). */
function pgText(field: FieldSpec): string {
  return COLUMNS.has(field.store) ? `t.${field.store}` : `t.data #>> ${storePath(field.store)}`;
}

/** The UTC text ClickHouse parses into DateTime64(6). */
function pgTimestamp(sql: string): string {
  return `to_char(${sql} at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')`;
}

function columnOf(field: FieldSpec): MirrorColumn {
  const name = columnName(field.store);
  const text = pgText(field);
  switch (field.type) {
    case 'money':
      return { name, field, chType: 'Nullable(Int64)', pgValue: `case when ${text} ~ ${INTEGER} then (${text})::bigint end` };
    case 'integer':
    case 'number':
      return { name, field, chType: 'Nullable(Float64)', pgValue: `case when ${text} ~ ${NUMBER} then (${text})::float8 end` };
    case 'boolean':
      return { name, field, chType: 'Nullable(Bool)', pgValue: `case ${text} when 'true' then true when 'false' then false end` };
    case 'datetime':
      if (!COLUMNS.has(field.store)) throw new Error(`reporting: datetime field ${field.store} stored in data is not supported`);
      // A tombstone has no row left in `transactions`: its key comes from the change feed.
      if (field.store === 'created_at') return { name, field, chType: "DateTime64(6, 'UTC')", pgValue: pgTimestamp('c.created_at') };
      return { name, field, chType: "DateTime64(6, 'UTC')", pgValue: pgTimestamp(`coalesce(${text}, c.changed_at)`) };
    default: {
      if (field.store === 'id') return { name, field, chType: 'String', pgValue: 'c.transaction_id' };
      if (field.store === 'type') return { name, field, chType: 'LowCardinality(String)', pgValue: `coalesce(t.type, '')` };
      const chType = field.enum ? 'LowCardinality(Nullable(String))' : 'Nullable(String)';
      return { name, field, chType, pgValue: text };
    }
  }
}

function mirroredFields(): FieldSpec[] {
  const seen = new Set<string>();
  return transactions.fields.filter((field) => {
    if (field.writeOnly || UNMIRRORED_TYPES.has(field.type) || seen.has(field.store)) return false;
    seen.add(field.store);
    return true;
  });
}

const ATTRS = `coalesce((select jsonb_object_agg(a.key, a.value) from jsonb_each_text(
    case when jsonb_typeof(t.data -> 'attrs') = 'object' then t.data -> 'attrs' end) a where a.value is not null), '{}'::jsonb)`;

/** Every column of the mirror table, in table order. The sorting key columns come first. */
export const MIRROR_COLUMNS: MirrorColumn[] = [
  { name: 'org_id', chType: 'String', pgValue: 'c.org_id' },
  { name: 'environment', chType: 'LowCardinality(String)', pgValue: 'c.environment' },
  ...mirroredFields().map(columnOf),
  { name: 'attrs', chType: 'Map(String, String)', pgValue: ATTRS },
  { name: 'version', chType: 'UInt64', pgValue: 'c.version' },
  { name: 'is_deleted', chType: 'UInt8', pgValue: '(c.deleted or t.id is null)::int' },
];

/** Mirrored columns by the field's storage path (`sender.account_id`). */
export const COLUMN_BY_STORE = new Map(MIRROR_COLUMNS.filter((c) => c.field).map((c) => [c.field!.store, c]));

export const ATTRS_STORE = 'attrs';

/** The Postgres select list producing one JSONEachRow line per change row. */
export function pgRowJson(): string {
  const pairs = MIRROR_COLUMNS.map((c) => `'${c.name}', ${c.pgValue}`).join(',\n      ');
  return `json_build_object(\n      ${pairs})::text`;
}

/** The mirror table's DDL. Any change to it changes `schemaFingerprint`, which triggers a rebuild. */
export function tableDdl(table: string): string {
  const columns = MIRROR_COLUMNS.map((c) => `  ${c.name} ${c.chType}`).join(',\n');
  return `CREATE TABLE IF NOT EXISTS ${table} (\n${columns}\n)
ENGINE = ReplacingMergeTree(version, is_deleted)
PARTITION BY toYYYYMM(created_at)
ORDER BY (org_id, environment, created_at, id)`;
}

export function schemaFingerprint(): string {
  return createHash('sha256').update(tableDdl('t')).update(pgRowJson()).digest('hex').slice(0, 16);
}
