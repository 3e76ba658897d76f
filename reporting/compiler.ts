/**
 * Compiles the query AST (api/query/ast.ts) to ClickHouse SQL over the mirror table: the same
 * language and the same answers as the Postgres compiler (api/query/toSql.ts), which is the
 * reference the agreement test holds it to. Fields resolve through the family's schema for the
 * request's version and must be mirrored columns; every value is a typed `{pN:Type}` parameter;
 * operand types are checked here, so a mismatch is a 400 and never reaches ClickHouse.
 */
import { badRequest, invalidAttributes, type ApiError } from '../api/errors.ts';
import type { Family, FieldSpec, Version } from '../api/engine/family.ts';
import { fieldsOf } from '../api/schema/fields.ts';
import type { Call, CompareOp, Expr, Literal, Operand } from '../api/query/ast.ts';
import { AGGREGATE_FUNCTIONS, rowPartials, type ExactMoney, type Partials } from '../api/query/aggregates.ts';
import { ATTRS_STORE, COLUMN_BY_STORE, type Rollup, type RollupMeasure } from './columns.ts';
import { checkDateAgainst, describeOperand as describe, flip, isLiteralLike, moneyLiteral, notACondition, toDate } from '../api/query/operands.ts';
import { CASE_INSENSITIVE_LIKE, category, COMPARISONS, likePattern, scalarFunction, takes, type Bind, type Category, type ValueType } from '../api/query/functions.ts';

export type { ValueType };

export interface Typed {
  sql: string;
  type: ValueType;
  field?: FieldSpec;
  /** the SELECT expression when the value must travel exactly (money), and how to decode it */
  exact?: ExactMoney;
  /** a time the rollup keeps by day only: usable under a function of the day, nowhere else */
  byDay?: boolean;
}

/**
 * A query the rollup cannot answer (a field it does not keep, a time finer than its days): the
 * report is compiled over the mirror instead (reporting/report.ts).
 */
export class NotCovered extends Error {
  override name = 'NotCovered';
}

/** A money field's partials over the rollup's partial columns: each rollup row stands for a group of transactions. */
function measurePartials(m: RollupMeasure): Partials {
  const n = `sum(${m.count})`;
  const total = `sum(${m.sum})`;
  const squares = `sum(${m.squares})`;
  // (n·Σx² − (Σx)²) / (n(n−1)), the numerator exact, as the money forms decode it.
  const variance = `if(${n} < 2, nan, toFloat64(toInt128(${n}) * ${squares} - toInt128(${total}) * ${total}) / (${n} * (${n} - 1)))`;
  return {
    count: () => n,
    sum: () => total,
    sumWide: () => `sum(toInt128(${m.sum}))`,
    squares: () => squares,
    min: () => `min(${m.min})`,
    max: () => `max(${m.max})`,
    avg: () => `(${total} / ${n})`,
    stddevSamp: () => `sqrt(${variance})`,
    varSamp: () => variance,
  };
}

/** An expression of the rollup's dimensions (the same over every transaction of a row), weighted by the row's count. */
function dimensionPartials(x: string, rows: string): Partials {
  const count = `sumIf(${rows}, isNotNull(${x}))`;
  const total = `sum(${x} * ${rows})`;
  const uncovered = (): string => {
    throw new NotCovered(`a statistic of ${x}`);
  };
  return {
    count: () => count,
    sum: () => total,
    sumWide: uncovered,
    squares: uncovered,
    min: () => `min(${x})`,
    max: () => `max(${x})`,
    avg: () => `(${total} / ${count})`,
    stddevSamp: uncovered,
    varSamp: uncovered,
  };
}

/** ClickHouse's DateTime64 covers 1900-01-01 … 2299-12-31; a literal beyond compares like the bound. */
const MIN_TIME = Date.UTC(1900, 0, 1);
const MAX_TIME = Date.UTC(2299, 11, 31, 23, 59, 59, 999);

/** Every value is bound: a name per value, typed, never spliced into the SQL text. */
export class Params {
  readonly values: Record<string, unknown> = {};
  #next = 0;

  add(type: string, value: unknown): string {
    const name = `p${this.#next++}`;
    this.values[name] = value;
    return `{${name}:${type}}`;
  }
}

/** PG's text form of a value (`x::text`), for lower/upper/length and `?`. */
function textOf(operand: Typed): string {
  switch (category(operand.type)) {
    case 'text': return operand.sql;
    case 'time':
      if (operand.type === 'date') return `toString(${operand.sql})`;
      // timestamptz::text in UTC: trailing zeros of the fraction dropped, then the offset.
      return `concat(replaceRegexpOne(toString(${operand.sql}), '\\\\.?0+$', ''), '+00')`;
    default: return `toString(${operand.sql})`;
  }
}

function asTime(operand: Typed): string {
  return operand.type === 'date' ? `toDateTime64(${operand.sql}, 6, 'UTC')` : operand.sql;
}

export class ClickHouseCompiler {
  readonly family: Family;
  readonly version: Version;
  readonly params: Params;
  private readonly fields: Map<string, FieldSpec>;
  /** stored field → its ClickHouse column: the transaction mirror's, or another table's of the store (the request log) */
  private readonly columns: ReadonlyMap<string, { name: string }>;
  /** set when compiling over the rollup: what it keeps; anything else throws NotCovered */
  private readonly rollup: Rollup | undefined;

  constructor(family: Family, version: Version, params = new Params(), columns: ReadonlyMap<string, { name: string }> = COLUMN_BY_STORE, rollup?: Rollup) {
    this.family = family;
    this.version = version;
    this.params = params;
    this.fields = fieldsOf(family, version);
    this.columns = rollup ? rollup.dimensions : columns;
    this.rollup = rollup;
  }

  where(expr: Expr): string {
    switch (expr.kind) {
      case 'and':
      case 'or':
        return expr.items.map((item) => `(${this.where(item)})`).join(expr.kind === 'and' ? ' AND ' : ' OR ');
      case 'not':
        return `NOT coalesce((${this.where(expr.expr)}), 0)`;
      case 'truthy':
        return this.truthy(expr.operand);
      case 'cmp':
        return this.compare(expr.op, expr.left, expr.right);
    }
  }

  private truthy(node: Operand): string {
    if (node.kind === 'literal' && (typeof node.value === 'boolean' || node.value === 'true' || node.value === 'false')) {
      return this.params.add('Bool', node.value === true || node.value === 'true');
    }
    const operand = node.kind === 'literal' ? null : this.operand(node, false);
    if (operand?.type !== 'boolean') throw notACondition(node);
    return operand.sql;
  }

  private compare(op: CompareOp, leftNode: Operand, rightNode: Operand): string {
    // Keep the field on the left so the literal is typed by it.
    if (isLiteralLike(leftNode) && !isLiteralLike(rightNode)) return this.compare(flip(op), rightNode, leftNode);
    const left = this.operand(leftNode, false);
    if (rightNode.kind === 'literal' && rightNode.value === null) {
      if (op === '==') return `isNull(${left.sql})`;
      if (op === '!=') return `isNotNull(${left.sql})`;
      throw badRequest('null can only be compared with == or !=', { q: `null used with ${op}` });
    }
    if (op === '?') return this.like(left, rightNode);
    let right: Typed;
    if (isLiteralLike(rightNode)) {
      right = this.literal(rightNode, left);
    } else {
      right = this.operand(rightNode, false);
      if (category(left.type) !== category(right.type) || category(left.type) === 'other') {
        throw badRequest('Cannot compare values of different types', { q: `${describe(leftNode)} and ${describe(rightNode)} have different types` });
      }
    }
    // Timestamps are shown to the second; against a literal they compare at that precision.
    const leftSql = left.type === 'datetime' && isLiteralLike(rightNode) ? `toStartOfSecond(${left.sql})` : left.sql;
    const [l, r] = category(left.type) === 'time' ? [asTime({ ...left, sql: leftSql }), asTime(right)] : [leftSql, right.sql];
    return COMPARISONS[op].clickhouse(l, r);
  }

  private like(left: Typed, pattern: Operand): string {
    if (pattern.kind !== 'literal' || typeof pattern.value !== 'string') {
      throw badRequest('The ? operator takes a string pattern', { q: 'expected a string pattern' });
    }
    const bind = this.bind();
    return CASE_INSENSITIVE_LIKE.clickhouse(textOf(left), bind('String', likePattern(pattern.value)), bind);
  }

  /** Types a literal by the operand it is compared with ("10.50" against money → 1050). */
  private literal(node: Literal | Operand, against: Typed): Typed {
    if (node.kind === 'date') {
      checkDateAgainst(against.type, node);
      return this.timeParam(toDate(node.value, 'date'), 'datetime');
    }
    if (node.kind !== 'literal') throw badRequest('Expected a value');
    const value = node.value;
    const name = against.field ? (this.pathOf(against.field) ?? 'value') : 'value';
    const bad = (reason: string) => invalidAttributes({ [name]: reason });
    switch (against.type) {
      case 'money':
        return { sql: this.params.add('Int64', moneyLiteral(node, bad)), type: 'money' };
      case 'integer':
      case 'number':
      case 'aggregate': {
        const number = Number(value);
        if (typeof value === 'boolean' || value === '' || !Number.isFinite(number)) throw bad('Must be a number');
        return { sql: this.params.add('Float64', number), type: 'number' };
      }
      case 'boolean': {
        if (value === true || value === 'true') return { sql: this.params.add('Bool', true), type: 'boolean' };
        if (value === false || value === 'false') return { sql: this.params.add('Bool', false), type: 'boolean' };
        throw bad('Must be true or false');
      }
      case 'datetime':
        return this.timeParam(toDate(value, name), 'datetime');
      case 'date':
        return this.timeParam(toDate(value, name), 'date');
      default: {
        const text = String(value);
        const renamed = against.field?.values?.[this.version]?.[text] ?? text;
        return { sql: this.params.add('String', renamed), type: 'text' };
      }
    }
  }

  private timeParam(date: Date, type: 'datetime' | 'date'): Typed {
    const clamped = new Date(Math.min(Math.max(date.getTime(), MIN_TIME), MAX_TIME)).toISOString();
    if (type === 'date') return { sql: this.params.add('Date32', clamped.slice(0, 10)), type };
    return { sql: this.params.add("DateTime64(6, 'UTC')", `${clamped.slice(0, 10)} ${clamped.slice(11, 23)}`), type };
  }

  /** Compiles a field, function call or literal used as a value. */
  operand(node: Operand, allowAggregates: boolean): Typed {
    switch (node.kind) {
      case 'field': {
        const typed = this.field(node.path);
        if (typed.byDay) throw new NotCovered(`${describe(node)} finer than a day`);
        return typed;
      }
      case 'call':
        return this.call(node, allowAggregates);
      case 'date':
        return this.timeParam(toDate(node.value, 'date'), 'datetime');
      case 'literal':
        return { sql: node.value === null ? 'NULL' : this.params.add('String', String(node.value)), type: 'text' };
    }
  }

  private call(node: Call, allowAggregates: boolean): Typed {
    const fn = node.fn.toLowerCase();
    if (AGGREGATE_FUNCTIONS[fn]) return this.aggregate(node, fn, allowAggregates);
    const spec = scalarFunction(node.fn);
    const arg = this.singleArg(node, this.rollup?.timeFunctions.has(fn));
    if (!takes(spec, arg.type)) throw wrongArgument(node, spec.args);
    // abs keeps money; the others work on the decimal amount, as the Postgres compiler does.
    if (fn === 'abs' && arg.type === 'money') return { sql: spec.clickhouse(arg.sql, this.bind()), type: 'money', field: arg.field };
    const input = spec.args === 'any' ? textOf(arg) : spec.args === 'time' ? asTime(arg) : arg.type === 'money' ? `(${arg.sql}) / 100` : arg.sql;
    return { sql: spec.clickhouse(input, this.bind()), type: spec.type };
  }

  private bind(): Bind {
    return (type, value) => this.params.add(type, value);
  }

  private aggregate(node: Call, fn: string, allowAggregates: boolean): Typed {
    if (!allowAggregates) throw badRequest(`Aggregate ${fn}() is not allowed here`, { [fn]: 'Aggregates are allowed in fields only' });
    if (fn === 'count' && node.args.length === 0) return { sql: this.rollup ? `sum(${this.rollup.rows})` : 'count()', type: 'aggregate' };
    const aggregate = AGGREGATE_FUNCTIONS[fn];
    const { arg, partials } = this.aggregateArg(node);
    const kind = category(arg.type);
    if (aggregate.numeric && kind !== 'number') throw wrongArgument(node, 'number');
    if (kind === 'other') throw wrongArgument(node, 'any');
    const money = arg.type === 'money';
    const exact = money ? aggregate.clickhouseMoney?.(partials) : undefined;
    const sql = aggregate.clickhouse(partials);
    if (aggregate.answers === 'count') return { sql, type: 'aggregate' };
    if (aggregate.answers === 'argument') return { sql, type: arg.type, field: arg.field, exact };
    return { sql, type: money ? 'money' : 'aggregate', exact };
  }

  /** An aggregate's argument and its partials: over the rows, or over the rollup (a money field's partial columns, or dimensions). */
  private aggregateArg(node: Call): { arg: Typed; partials: Partials } {
    if (!this.rollup) {
      const arg = this.singleArg(node);
      return { arg, partials: rowPartials(arg.sql) };
    }
    const argNode = node.args.length === 1 ? node.args[0] : undefined;
    if (argNode?.kind === 'field') {
      const spec = this.fields.get(argNode.path.join('.'));
      const measure = spec && !spec.writeOnly ? this.rollup.measures.get(spec.store) : undefined;
      if (measure) return { arg: { sql: '', type: spec!.type, field: spec }, partials: measurePartials(measure) };
    }
    const arg = this.singleArg(node);
    return { arg, partials: dimensionPartials(arg.sql, this.rollup.rows) };
  }

  /** A function's one argument; `byDay`: the rollup's day may stand for a time (a function its grain decides). */
  private singleArg(node: Call, byDay = false): Typed {
    if (node.args.length !== 1) throw badRequest(`${node.fn}() takes one argument`, { [node.fn]: 'Takes one argument' });
    const arg = node.args[0];
    if (arg.kind === 'literal') throw badRequest(`${node.fn}() takes a field`, { [node.fn]: 'Expected a field or function, not a value' });
    return byDay && arg.kind === 'field' ? this.field(arg.path) : this.operand(arg, false);
  }

  /** Resolves a client path (`status.value`, `attrs[region]`) to a mirrored column. */
  field(path: string[]): Typed {
    const dotted = path.join('.');
    const exact = this.fields.get(dotted);
    if (exact && !exact.writeOnly) {
      if (this.rollup?.day.store === exact.store) return { sql: this.rollup.day.column, type: 'date', byDay: true };
      const column = this.columns.get(exact.store);
      if (!column && this.rollup) throw new NotCovered(`${dotted} is not kept`);
      if (!column) throw invalidAttributes({ [dotted]: 'Not available in reporting queries' });
      return { sql: column.name, type: exact.type, field: exact };
    }
    for (let i = path.length - 1; i > 0; i--) {
      const parent = this.fields.get(path.slice(0, i).join('.'));
      if (parent?.type !== 'json') continue;
      if (this.rollup) throw new NotCovered(`${dotted} is not kept`);
      if (parent.store === ATTRS_STORE && i === path.length - 1) {
        // A missing attribute is NULL, as `data #>> '{attrs,name}'` is in Postgres.
        const key = this.params.add('String', path[i]);
        return { sql: `if(mapContains(attrs, ${key}), attrs[${key}], NULL)`, type: 'text' };
      }
      throw invalidAttributes({ [dotted]: 'Not available in reporting queries' });
    }
    throw invalidAttributes({ [dotted || 'field']: 'Unknown field' });
  }

  private pathOf(field: FieldSpec): string | undefined {
    return this.version === 'v1' ? field.v1 : field.v2;
  }
}

function wrongArgument(node: Call, expected: Category | 'any'): ApiError {
  const what = expected === 'number' ? 'a number' : expected === 'time' ? 'a date or time' : 'a field';
  return badRequest(`${node.fn}() takes ${what}`, { [node.fn]: `Expected ${what}, got ${node.args.map(describe).join(', ')}` });
}

