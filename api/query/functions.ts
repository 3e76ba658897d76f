/**
 * What each scalar function and comparison of the query language means (CONTRACT §6), written
 * once for both stores: PostgreSQL (api/query/toSql.ts), the reference, and the reporting
 * process's ClickHouse (reporting/compiler.ts). Each entry says what it takes, what it yields and
 * its SQL in each dialect, so a new function is one entry here and both answer it alike.
 * The aggregates are the same kind of table: api/query/aggregates.ts.
 */
import { badRequest } from '../errors.ts';
import type { FieldType } from '../schema/fields.ts';
import { caseTable, LOWER_RUNS, UPPER_RUNS, type CaseTables } from './caseMap.ts';
import type { CompareOp } from './ast.ts';

/** What an operand evaluates to: a field's type, or what a function or aggregate yields. */
export type ValueType = FieldType | 'date' | 'text' | 'aggregate';

/** Kinds of value that compare with each other. */
export type Category = 'number' | 'text' | 'time' | 'boolean' | 'other';

export function category(type: ValueType): Category {
  switch (type) {
    case 'money': case 'integer': case 'number': case 'aggregate': return 'number';
    case 'string': case 'email': case 'id': case 'text': return 'text';
    case 'datetime': case 'date': return 'time';
    case 'boolean': return 'boolean';
    default: return 'other';
  }
}

/** Binds a value as a typed ClickHouse parameter and answers the placeholder. */
export type Bind = (type: string, value: unknown) => string;

export interface ScalarFunction {
  /**
   * What it takes: any value, read as PostgreSQL's text of it; a number (money as its decimal
   * amount); or a date or time, read in UTC.
   */
  args: 'any' | 'number' | 'time';
  /** what it yields; a `date` is shown as YYYY-MM-DD */
  type: 'number' | 'text' | 'date';
  /** PostgreSQL over the argument: its text, its number, or its time (timestamptz or date) */
  postgres: (a: string) => string;
  /** ClickHouse over the argument: its text, its number, or its DateTime64 in UTC */
  clickhouse: (a: string, bind: Bind) => string;
}

let LOWER = caseTable(LOWER_RUNS);
let UPPER = caseTable(UPPER_RUNS);

/** Whether the tables in use say what `tables`, read from a database, say. */
export function caseTablesMatch(tables: Pick<CaseTables, 'lower' | 'upper'>): boolean {
  return tables.lower.from === LOWER.from && tables.lower.to === LOWER.to && tables.upper.from === UPPER.from && tables.upper.to === UPPER.to;
}

/** Makes the ClickHouse compiler map case as `tables` (read from the database the mirror follows) do. */
export function useCaseTables(tables: Pick<CaseTables, 'lower' | 'upper'>): void {
  LOWER = tables.lower;
  UPPER = tables.upper;
}

/** PostgreSQL's lower() in ClickHouse: character for character, as the case tables record it. */
export function clickhouseLower(text: string, bind: Bind): string {
  return `translateUTF8(${text}, ${bind('String', LOWER.from)}, ${bind('String', LOWER.to)})`;
}

function clickhouseUpper(text: string, bind: Bind): string {
  return `translateUTF8(${text}, ${bind('String', UPPER.from)}, ${bind('String', UPPER.to)})`;
}

const utc = (a: string) => `((${a}) at time zone 'UTC')`;

export const SCALAR_FUNCTIONS: Readonly<Record<string, ScalarFunction>> = {
  lower: { args: 'any', type: 'text', postgres: (a) => `lower(${a})`, clickhouse: clickhouseLower },
  upper: { args: 'any', type: 'text', postgres: (a) => `upper(${a})`, clickhouse: clickhouseUpper },
  length: { args: 'any', type: 'number', postgres: (a) => `length(${a})`, clickhouse: (a) => `lengthUTF8(${a})` },
  abs: { args: 'number', type: 'number', postgres: (a) => `abs(${a})`, clickhouse: (a) => `abs(${a})` },
  ceil: { args: 'number', type: 'number', postgres: (a) => `ceil(${a})`, clickhouse: (a) => `ceil(${a})` },
  floor: { args: 'number', type: 'number', postgres: (a) => `floor(${a})`, clickhouse: (a) => `floor(${a})` },
  // Postgres rounds numeric halves away from zero; ClickHouse's round() would round them to even.
  round: { args: 'number', type: 'number', postgres: (a) => `round(${a})`, clickhouse: (a) => `if(${a} >= 0, floor(${a} + 0.5), ceil(${a} - 0.5))` },
  year: { args: 'time', type: 'number', postgres: (a) => `extract(year from ${utc(a)})::int`, clickhouse: (a) => `toYear(${a})` },
  month: { args: 'time', type: 'number', postgres: (a) => `extract(month from ${utc(a)})::int`, clickhouse: (a) => `toMonth(${a})` },
  monthname: { args: 'time', type: 'text', postgres: (a) => `to_char(${utc(a)}, 'FMMonth')`, clickhouse: (a) => `monthName(${a})` },
  day: { args: 'time', type: 'number', postgres: (a) => `extract(day from ${utc(a)})::int`, clickhouse: (a) => `toDayOfMonth(${a})` },
  dayname: { args: 'time', type: 'text', postgres: (a) => `to_char(${utc(a)}, 'FMDay')`, clickhouse: (a) => `dateName('weekday', ${a})` },
  // Sunday = 1. Not toDayOfWeek(x, 3): ClickHouse 26.7 prunes granules as if that were monotonic
  // over a Friday–Sunday range and drops matching rows (reporting-agreement.test.ts found it).
  dayofweek: { args: 'time', type: 'number', postgres: (a) => `(extract(dow from ${utc(a)})::int + 1)`, clickhouse: (a) => `(modulo(toDayOfWeek(${a}), 7) + 1)` },
  dayofyear: { args: 'time', type: 'number', postgres: (a) => `extract(doy from ${utc(a)})::int`, clickhouse: (a) => `toDayOfYear(${a})` },
  weekofyear: { args: 'time', type: 'number', postgres: (a) => `extract(week from ${utc(a)})::int`, clickhouse: (a) => `toISOWeek(${a})` },
  last_day: { args: 'time', type: 'date', postgres: (a) => `(date_trunc('month', ${utc(a)}) + interval '1 month - 1 day')::date`, clickhouse: (a) => `toLastDayOfMonth(${a})` },
  hour: { args: 'time', type: 'number', postgres: (a) => `extract(hour from ${utc(a)})::int`, clickhouse: (a) => `toHour(${a})` },
  minute: { args: 'time', type: 'number', postgres: (a) => `extract(minute from ${utc(a)})::int`, clickhouse: (a) => `toMinute(${a})` },
  second: { args: 'time', type: 'number', postgres: (a) => `floor(extract(second from ${utc(a)}))::int`, clickhouse: (a) => `toSecond(${a})` },
  unix_timestamp: { args: 'time', type: 'number', postgres: (a) => `floor(extract(epoch from ${a}))::bigint`, clickhouse: (a) => `toUnixTimestamp(${a})` },
  date: { args: 'time', type: 'date', postgres: (a) => `(${utc(a)})::date`, clickhouse: (a) => `toDate(${a})` },
};

/** The function named in a call, or a 400 naming it. */
export function scalarFunction(name: string): ScalarFunction {
  const spec = SCALAR_FUNCTIONS[name.toLowerCase()];
  if (!spec) throw badRequest(`Unknown function ${name}`, { [name]: 'Unknown function' });
  return spec;
}

/**
 * Whether a function takes an argument of this type: text functions take no amount (its text in
 * PostgreSQL is the numeric quotient, `10.5000000000000000`, no form a client can rely on).
 */
export function takes(spec: ScalarFunction, type: ValueType): boolean {
  if (spec.args === 'any') return type !== 'money' && category(type) !== 'other';
  return category(type) === spec.args;
}

/** `*` is the wildcard of `?`; LIKE's own `%`, `_` and `\` are matched literally. */
export function likePattern(pattern: string): string {
  return pattern.replace(/[\\%_]/g, (c) => `\\${c}`).replace(/\*/g, '%');
}

/** A comparison in each dialect, over its two sides' SQL. `!=` is null-safe: a missing value differs from any value. */
export const COMPARISONS: Readonly<Record<Exclude<CompareOp, '?'>, { postgres: (l: string, r: string) => string; clickhouse: (l: string, r: string) => string }>> = {
  '==': { postgres: (l, r) => `(${l}) = (${r})`, clickhouse: (l, r) => `(${l}) = (${r})` },
  '!=': { postgres: (l, r) => `(${l}) is distinct from (${r})`, clickhouse: (l, r) => `coalesce((${l}) != (${r}), isNull(${l}) != isNull(${r}))` },
  '<': { postgres: (l, r) => `(${l}) < (${r})`, clickhouse: (l, r) => `(${l}) < (${r})` },
  '<=': { postgres: (l, r) => `(${l}) <= (${r})`, clickhouse: (l, r) => `(${l}) <= (${r})` },
  '>': { postgres: (l, r) => `(${l}) > (${r})`, clickhouse: (l, r) => `(${l}) > (${r})` },
  '>=': { postgres: (l, r) => `(${l}) >= (${r})`, clickhouse: (l, r) => `(${l}) >= (${r})` },
};

/**
 * `text ? pattern`: LIKE without regard to case, as PostgreSQL's ILIKE over UTF-8 is — both sides
 * lowered by lower(), then LIKE. ClickHouse's ilike folds case by other rules (`İ` ≠ `i`).
 */
export const CASE_INSENSITIVE_LIKE = {
  postgres: (text: string, pattern: string) => `(${text}) ilike ${pattern}`,
  clickhouse: (text: string, pattern: string, bind: Bind) => `like(${clickhouseLower(text, bind)}, ${clickhouseLower(pattern, bind)})`,
};
