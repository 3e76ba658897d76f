/**
 * Compiles the query AST to parameterised Postgres SQL for one family's table. Every field is
 * resolved against the family's schema for the request's version; every value is a binding.
 * The tenant filter is added by the repository, outside anything compiled here.
 */
import type { Sql } from '../db/connection.ts';
import { badRequest, invalidAttributes } from '../errors.ts';
import { COLUMNS, fieldsOf, type FieldSchema, type FieldSpec, type FieldType, type Version } from '../schema/fields.ts';
import type { Call, Expr, Literal, Operand } from './ast.ts';
import { flip, isLiteralLike, toDate } from './operands.ts';
import { AGGREGATE_FUNCTIONS } from './aggregates.ts';

/** What an operand evaluates to: SQL plus the type the comparison coerces literals to. */
interface Typed extends Sql {
  type: ValueType;
  field?: FieldSpec;
}

type ValueType = FieldType | 'date' | 'text' | 'aggregate';


/** Postgres SQL of each scalar function of CONTRACT §6 and the type it yields. */
const FUNCTIONS: Record<string, { sql: (arg: string) => string; type: ValueType }> = {
  lower: { sql: (a) => `lower((${a})::text)`, type: 'text' },
  upper: { sql: (a) => `upper((${a})::text)`, type: 'text' },
  length: { sql: (a) => `length((${a})::text)`, type: 'number' },
  abs: { sql: (a) => `abs(${a})`, type: 'number' },
  ceil: { sql: (a) => `ceil(${a})`, type: 'number' },
  floor: { sql: (a) => `floor(${a})`, type: 'number' },
  round: { sql: (a) => `round(${a})`, type: 'number' },
  year: { sql: (a) => `extract(year from ${utc(a)})::int`, type: 'number' },
  month: { sql: (a) => `extract(month from ${utc(a)})::int`, type: 'number' },
  monthname: { sql: (a) => `to_char(${utc(a)}, 'FMMonth')`, type: 'text' },
  day: { sql: (a) => `extract(day from ${utc(a)})::int`, type: 'number' },
  dayname: { sql: (a) => `to_char(${utc(a)}, 'FMDay')`, type: 'text' },
  dayofweek: { sql: (a) => `(extract(dow from ${utc(a)})::int + 1)`, type: 'number' },
  dayofyear: { sql: (a) => `extract(doy from ${utc(a)})::int`, type: 'number' },
  weekofyear: { sql: (a) => `extract(week from ${utc(a)})::int`, type: 'number' },
  last_day: { sql: (a) => `(date_trunc('month', ${utc(a)}) + interval '1 month - 1 day')::date`, type: 'date' },
  hour: { sql: (a) => `extract(hour from ${utc(a)})::int`, type: 'number' },
  minute: { sql: (a) => `extract(minute from ${utc(a)})::int`, type: 'number' },
  second: { sql: (a) => `floor(extract(second from ${utc(a)}))::int`, type: 'number' },
  unix_timestamp: { sql: (a) => `floor(extract(epoch from ${a}))::bigint`, type: 'number' },
  date: { sql: (a) => `(${utc(a)})::date`, type: 'date' },
};

function utc(sql: string): string {
  return `((${sql}) at time zone 'UTC')`;
}

const CASTS: Partial<Record<FieldType, string>> = {
  integer: 'numeric',
  number: 'numeric',
  money: 'bigint',
  boolean: 'boolean',
  datetime: 'timestamptz',
};

export class SqlCompiler {
  readonly family: FieldSchema;
  readonly version: Version;
  private readonly fields: Map<string, FieldSpec>;

  constructor(family: FieldSchema, version: Version) {
    this.family = family;
    this.version = version;
    this.fields = fieldsOf(family, version);
  }

  where(expr: Expr): Sql {
    switch (expr.kind) {
      case 'and':
      case 'or': {
        const parts = expr.items.map((item) => this.where(item));
        return join(parts, expr.kind === 'and' ? ' and ' : ' or ');
      }
      case 'not': {
        const inner = this.where(expr.expr);
        return { sql: `not coalesce((${inner.sql}), false)`, bindings: inner.bindings };
      }
      case 'truthy': {
        const operand = this.operand(expr.operand, false);
        return { sql: `(${operand.sql})::boolean`, bindings: operand.bindings };
      }
      case 'cmp':
        return this.compare(expr.op, expr.left, expr.right);
    }
  }

  private compare(op: string, leftNode: Operand, rightNode: Operand): Sql {
    // Keep the field on the left so the literal is typed by it.
    if (isLiteralLike(leftNode) && !isLiteralLike(rightNode)) return this.compare(flip(op), rightNode, leftNode);
    const left = this.operand(leftNode, false);
    if (rightNode.kind === 'literal' && rightNode.value === null) {
      if (op === '==') return { sql: `(${left.sql}) is null`, bindings: left.bindings };
      if (op === '!=') return { sql: `(${left.sql}) is not null`, bindings: left.bindings };
      throw badRequest('null can only be compared with == or !=', { q: `null used with ${op}` });
    }
    if (op === '?') return this.like(left, rightNode);
    // Timestamps are shown to the second; compare them at that precision so an object's own
    // rendered created_at finds it.
    if (left.type === 'datetime' && isLiteralLike(rightNode)) left.sql = `date_trunc('second', ${left.sql})`;
    let right: Sql;
    if (isLiteralLike(rightNode)) right = this.literal(rightNode, left);
    else {
      const other = this.operand(rightNode, false);
      if (!comparable(left.type, other.type)) throw badRequest(`Cannot compare a ${left.type} with a ${other.type}`, { q: `${left.type} compared with ${other.type}` });
      right = other;
    }
    const sqlOp = op === '==' ? '=' : op === '!=' ? '<>' : op;
    const sql = op === '!='
      ? `(${left.sql}) is distinct from (${right.sql})`
      : `(${left.sql}) ${sqlOp} (${right.sql})`;
    return { sql, bindings: [...left.bindings, ...right.bindings] };
  }

  private like(left: Typed, pattern: Operand): Sql {
    if (pattern.kind !== 'literal' || typeof pattern.value !== 'string') {
      throw badRequest('The ? operator takes a string pattern', { q: 'expected a string pattern' });
    }
    const escaped = pattern.value.replace(/[\\%_]/g, (c) => `\\${c}`).replace(/\*/g, '%');
    return { sql: `(${left.sql})::text ilike ?`, bindings: [...left.bindings, escaped] };
  }

  /** Types a literal by the operand it is compared with ("10.50" against money → 1050). */
  private literal(node: Literal | Operand, against: Typed): Sql {
    if (node.kind === 'date') return { sql: '?::timestamptz', bindings: [toDate(node.value, 'date').toISOString()] };
    if (node.kind !== 'literal') throw badRequest('Expected a value');
    const value = node.value;
    const name = against.field ? (this.pathOf(against.field) ?? 'value') : 'value';
    const bad = (reason: string) => invalidAttributes({ [name]: reason });
    switch (against.type) {
      case 'money': {
        const amount = Number(value);
        if (typeof value === 'boolean' || !Number.isFinite(amount)) throw bad('Must be an amount');
        return { sql: '?::bigint', bindings: [Math.round(amount * 100)] };
      }
      case 'integer':
      case 'number':
      case 'aggregate': {
        const number = Number(value);
        if (typeof value === 'boolean' || value === '' || !Number.isFinite(number)) throw bad('Must be a number');
        return { sql: '?::numeric', bindings: [number] };
      }
      case 'boolean': {
        if (value === true || value === 'true') return { sql: '?::boolean', bindings: [true] };
        if (value === false || value === 'false') return { sql: '?::boolean', bindings: [false] };
        throw bad('Must be true or false');
      }
      case 'datetime':
        return { sql: '?::timestamptz', bindings: [toDate(value, name).toISOString()] };
      case 'date':
        return { sql: '?::date', bindings: [toDate(value, name).toISOString().slice(0, 10)] };
      default: {
        const text = String(value);
        const renamed = against.field?.values?.[this.version]?.[text] ?? text;
        return { sql: '?::text', bindings: [renamed] };
      }
    }
  }

  /** Compiles a field, function call or literal used as a value. */
  operand(node: Operand, allowAggregates: boolean): Typed {
    switch (node.kind) {
      case 'field':
        return this.field(node.path);
      case 'call':
        return this.call(node, allowAggregates);
      case 'date':
        return { sql: '?::timestamptz', bindings: [toDate(node.value, 'date').toISOString()], type: 'datetime' };
      case 'literal':
        return { sql: '?', bindings: [node.value], type: 'text' };
    }
  }

  private call(node: Call, allowAggregates: boolean): Typed {
    const fn = node.fn.toLowerCase();
    const aggregate = AGGREGATE_FUNCTIONS[fn];
    if (aggregate) {
      if (!allowAggregates) throw badRequest(`Aggregate ${fn}() is not allowed here`, { [fn]: 'Aggregates are allowed in fields only' });
      if (fn === 'count' && node.args.length === 0) return { sql: 'count(*)', bindings: [], type: 'aggregate' };
      const arg = this.singleArg(node, false);
      requireArgType(fn, arg);
      const money = arg.type === 'money';
      const sql = aggregate.postgres(arg.sql, money);
      // A statistic of money is already a plain number in major units.
      if (money && aggregate.answers === 'statistic') return { sql, bindings: arg.bindings, type: 'aggregate' };
      const type: ValueType = aggregate.answers === 'argument' ? arg.type : aggregate.answers === 'sum' && money ? 'money' : 'aggregate';
      return { sql, bindings: arg.bindings, type, field: arg.field };
    }
    const spec = FUNCTIONS[fn];
    if (!spec) throw badRequest(`Unknown function ${node.fn}`, { [node.fn]: 'Unknown function' });
    const arg = this.singleArg(node, false);
    requireArgType(fn, arg);
    if (fn === 'abs' && arg.type === 'money') return { sql: spec.sql(arg.sql), bindings: arg.bindings, type: 'money', field: arg.field };
    // Rounding money works on the decimal amount, not on minor units.
    const input = arg.type === 'money' ? `(${arg.sql}) / 100.0` : arg.sql;
    return { sql: spec.sql(input), bindings: arg.bindings, type: spec.type };
  }

  private singleArg(node: Call, allowAggregates: boolean): Typed {
    if (node.args.length !== 1) throw badRequest(`${node.fn}() takes one argument`, { [node.fn]: 'Takes one argument' });
    if (isLiteralLike(node.args[0])) throw badRequest(`${node.fn}() takes a field`, { [node.fn]: 'Takes a field, not a value' });
    return this.operand(node.args[0], allowAggregates);
  }

  /** A term of fields/group_by/order_by: a field or a function of one, never a bare value. */
  term(node: Operand, allowAggregates: boolean): Typed {
    if (isLiteralLike(node)) throw badRequest('Expected a field or a function of a field', { [String((node as Literal).value)]: 'Not a field' });
    return this.operand(node, allowAggregates);
  }

  /** Resolves a client path (`contact_details.email`, `attrs.region`) to SQL over the row. */
  field(path: string[]): Typed {
    const dotted = path.join('.');
    const exact = this.fields.get(dotted);
    if (exact && !exact.writeOnly) return { ...this.storageSql(exact.store, exact.type), field: exact };
    // Below a free-form json field (attrs[region]): compare as text.
    for (let i = path.length - 1; i > 0; i--) {
      const parent = this.fields.get(path.slice(0, i).join('.'));
      if (parent?.type === 'json') {
        const storePath = [...parent.store.split('.'), ...path.slice(i)];
        return { sql: 'data #>> ?::text[]', bindings: [storePath], type: 'text' };
      }
    }
    throw invalidAttributes({ [dotted || 'field']: 'Unknown field' });
  }

  private storageSql(store: string, type: FieldType): Sql & { type: ValueType } {
    if (COLUMNS.has(store)) return { sql: `"${store}"`, bindings: [], type };
    const cast = CASTS[type];
    const text = 'data #>> ?::text[]';
    return { sql: cast ? `(${text})::${cast}` : text, bindings: [store.split('.')], type };
  }

  private pathOf(field: FieldSpec): string | undefined {
    return this.version === 'v1' ? field.v1 : field.v2;
  }
}

const DATE_FUNCTIONS = new Set(['year', 'month', 'monthname', 'day', 'dayname', 'dayofweek', 'dayofyear', 'weekofyear', 'last_day', 'hour', 'minute', 'second', 'unix_timestamp', 'date']);
const NUMERIC_FUNCTIONS = new Set(['abs', 'ceil', 'floor', 'round', ...Object.keys(AGGREGATE_FUNCTIONS).filter((fn) => AGGREGATE_FUNCTIONS[fn].numeric)]);

const NUMERIC_TYPES = new Set<ValueType>(['integer', 'number', 'money', 'aggregate']);

/** A function over the wrong kind of value is the client's mistake: 400, before Postgres sees it. */
function requireArgType(fn: string, arg: Typed): void {
  if (DATE_FUNCTIONS.has(fn) && arg.type !== 'datetime' && arg.type !== 'date') {
    throw badRequest(`${fn}() takes a date or time`, { [fn]: 'Takes a date or time field' });
  }
  if (NUMERIC_FUNCTIONS.has(fn) && !NUMERIC_TYPES.has(arg.type)) {
    throw badRequest(`${fn}() takes a number`, { [fn]: 'Takes a numeric field' });
  }
}

const TYPE_GROUPS: Array<Set<ValueType>> = [
  new Set<ValueType>(['integer', 'number', 'money', 'aggregate']),
  new Set<ValueType>(['datetime', 'date']),
  new Set<ValueType>(['string', 'email', 'id', 'text']),
  new Set<ValueType>(['boolean']),
];

/** Two fields compare only when Postgres can compare their values (no text against a time). */
function comparable(a: ValueType, b: ValueType): boolean {
  return TYPE_GROUPS.some((group) => group.has(a) && group.has(b));
}

export function join(parts: Sql[], separator: string): Sql {
  return {
    sql: parts.map((p) => `(${p.sql})`).join(separator),
    bindings: parts.flatMap((p) => p.bindings),
  };
}
