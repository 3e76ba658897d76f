/**
 * Compiles the query AST to parameterised Postgres SQL for one family's table. Every field is
 * resolved against the family's schema for the request's version; every value is a binding.
 * The tenant filter is added by the repository, outside anything compiled here.
 */
import type { Sql } from '../db/connection.ts';
import { badRequest, invalidAttributes } from '../errors.ts';
import { COLUMNS, fieldsOf, type FieldSchema, type FieldSpec, type FieldType, type Version } from '../schema/fields.ts';
import type { Call, CompareOp, Expr, Literal, Operand } from './ast.ts';
import { checkDateAgainst, flip, isLiteralLike, moneyLiteral, notACondition, toDate } from './operands.ts';
import { AGGREGATE_FUNCTIONS } from './aggregates.ts';
import { CASE_INSENSITIVE_LIKE, category, COMPARISONS, likePattern, scalarFunction, takes, type ValueType } from './functions.ts';

/** What an operand evaluates to: SQL plus the type the comparison coerces literals to. */
interface Typed extends Sql {
  type: ValueType;
  field?: FieldSpec;
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
        const node = expr.operand;
        if (node.kind === 'literal' && (typeof node.value === 'boolean' || node.value === 'true' || node.value === 'false')) {
          return { sql: '?::boolean', bindings: [node.value === true || node.value === 'true'] };
        }
        const operand = node.kind === 'literal' ? null : this.operand(node, false);
        if (operand?.type !== 'boolean') throw notACondition(node);
        return { sql: `(${operand.sql})::boolean`, bindings: operand.bindings };
      }
      case 'cmp':
        return this.compare(expr.op, expr.left, expr.right);
    }
  }

  private compare(op: CompareOp, leftNode: Operand, rightNode: Operand): Sql {
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
    return { sql: COMPARISONS[op].postgres(left.sql, right.sql), bindings: [...left.bindings, ...right.bindings] };
  }

  private like(left: Typed, pattern: Operand): Sql {
    if (pattern.kind !== 'literal' || typeof pattern.value !== 'string') {
      throw badRequest('The ? operator takes a string pattern', { q: 'expected a string pattern' });
    }
    return { sql: CASE_INSENSITIVE_LIKE.postgres(`(${left.sql})::text`, '?'), bindings: [...left.bindings, likePattern(pattern.value)] };
  }

  /** Types a literal by the operand it is compared with ("10.50" against money → 1050). */
  private literal(node: Literal | Operand, against: Typed): Sql {
    if (node.kind === 'date') {
      checkDateAgainst(against.type, node);
      return { sql: '?::timestamptz', bindings: [toDate(node.value, 'date').toISOString()] };
    }
    if (node.kind !== 'literal') throw badRequest('Expected a value');
    const value = node.value;
    const name = against.field ? (this.pathOf(against.field) ?? 'value') : 'value';
    const bad = (reason: string) => invalidAttributes({ [name]: reason });
    switch (against.type) {
      case 'money':
        return { sql: '?::bigint', bindings: [moneyLiteral(node, bad)] };
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
      if (aggregate.numeric && category(arg.type) !== 'number') throw wrongArgument(fn, 'number');
      const money = arg.type === 'money';
      const sql = aggregate.postgres(arg.sql, money);
      // A statistic of money is already a plain number in major units.
      if (money && aggregate.answers === 'statistic') return { sql, bindings: arg.bindings, type: 'aggregate' };
      const type: ValueType = aggregate.answers === 'argument' ? arg.type : aggregate.answers === 'sum' && money ? 'money' : 'aggregate';
      return { sql, bindings: arg.bindings, type, field: arg.field };
    }
    const spec = scalarFunction(node.fn);
    const arg = this.singleArg(node, false);
    if (!takes(spec, arg.type)) throw wrongArgument(node.fn, spec.args);
    if (fn === 'abs' && arg.type === 'money') return { sql: spec.postgres(arg.sql), bindings: arg.bindings, type: 'money', field: arg.field };
    // Functions of money work on the decimal amount, not on minor units.
    const input = spec.args === 'any' ? `(${arg.sql})::text` : arg.type === 'money' ? `(${arg.sql}) / 100.0` : arg.sql;
    return { sql: spec.postgres(input), bindings: arg.bindings, type: spec.type };
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
    if (exact && !exact.writeOnly) return { ...this.storageSql(exact), field: exact };
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

  private storageSql({ store, column, type }: FieldSpec): Sql & { type: ValueType } {
    if (column) return { sql: `"${column}"`, bindings: [], type };
    if (COLUMNS.has(store)) return { sql: `"${store}"`, bindings: [], type };
    const cast = CASTS[type];
    const text = 'data #>> ?::text[]';
    return { sql: cast ? `(${text})::${cast}` : text, bindings: [store.split('.')], type };
  }

  private pathOf(field: FieldSpec): string | undefined {
    return this.version === 'v1' ? field.v1 : field.v2;
  }
}

/** A function over the wrong kind of value is the client's mistake: 400, before Postgres sees it. */
function wrongArgument(fn: string, takes: 'any' | 'number' | 'time') {
  if (takes === 'time') return badRequest(`${fn}() takes a date or time`, { [fn]: 'Takes a date or time field' });
  if (takes === 'number') return badRequest(`${fn}() takes a number`, { [fn]: 'Takes a numeric field' });
  return badRequest(`${fn}() takes text`, { [fn]: 'Takes a field other than an amount' });
}

/** Two fields compare only when both stores can compare their values (no text against a time). */
function comparable(a: ValueType, b: ValueType): boolean {
  return category(a) === category(b) && category(a) !== 'other';
}

export function join(parts: Sql[], separator: string): Sql {
  return {
    sql: parts.map((p) => `(${p.sql})`).join(separator),
    bindings: parts.flatMap((p) => p.bindings),
  };
}
