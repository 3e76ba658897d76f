/**
 * Turns the query string of a list request into a ListQuery (CONTRACT §5). The caller passes the
 * decoded key/value pairs in order, not a qs-parsed object, so that bracketed keys such as
 * `attrs[region]` or `fields[0]` are interpreted here and nowhere else.
 */
import { badRequest, type ApiError } from '../errors.ts';
import type { CompareOp, ExportFormat, Expr, ListQuery, Literal, Operand, OrderTerm, SelectTerm } from './ast.ts';
import { parseOperand, parseQ } from './q.ts';
import { AGGREGATES } from './aggregates.ts';

const DEFAULT_LIMIT = 1000;
const MAX_LIMIT = 10000;

type ListParam = 'fields' | 'group_by' | 'order_by';
/** `fields`, `fields[]` or `fields[3]` */
const LIST_KEY = /^(fields|group_by|order_by)(?:\[(\d*)\])?$/;
const SCALAR_KEYS = new Set(['limit', 'offset', 'mode', 'format']);
/** Any other key starting with a reserved name is a malformed reserved parameter, not a filter. */
const RESERVED_PREFIX = /^(?:fields|group_by|order_by|limit|offset|mode|format|q)\[/;
const FORMATS = new Set<ExportFormat>(['json', 'csv', 'parquet']);

/**
 * Functions of CONTRACT §6. Only order_by needs them: there a call is either a direction or an
 * expression to sort by, and a misspelt direction (`descending(x)`) should fail here, clearly.
 */
const FUNCTIONS = new Set([
  ...AGGREGATES,
  'lower', 'upper', 'length', 'abs', 'ceil', 'floor', 'round', 'year', 'month', 'monthname', 'day',
  'dayname', 'dayofweek', 'dayofyear', 'weekofyear', 'last_day', 'hour', 'minute', 'second',
  'unix_timestamp', 'date',
]);

/** `<=` is listed before `<` so the longer operator wins. */
const FILTER_OPERATORS: ReadonlyArray<[string, CompareOp]> = [
  ['!', '!='], ['<=', '<='], ['>=', '>='], ['<', '<'], ['>', '>'], ['?', '?'],
];

interface ListEntry {
  key: string;
  value: string;
  /** the `n` of `fields[n]`; unindexed entries keep their place after the indexed ones */
  index: number;
}

interface Term {
  key: string;
  text: string;
  pos: number;
}

/** `accept`: the request's Accept header; `text/csv` asks for CSV as `format=csv` does. */
export function parseListQuery(pairs: Array<[string, string]>, accept = ''): ListQuery {
  const lists: Record<ListParam, ListEntry[]> = { fields: [], group_by: [], order_by: [] };
  const scalars = new Map<string, string>();
  const conditions: Expr[] = [];
  for (const [key, value] of pairs) {
    const list = LIST_KEY.exec(key);
    if (list) lists[list[1] as ListParam].push(listEntry(key, value, list[2]));
    else if (key === 'q') conditions.push(...qCondition(value));
    else if (SCALAR_KEYS.has(key)) setOnce(scalars, key, value);
    else if (RESERVED_PREFIX.test(key)) throw badParam(key, 'unsupported form of a reserved parameter');
    else conditions.push(filterCondition(key, value));
  }
  const fields = selectTerms(lists.fields, true);
  const format = formatOf(scalars.get('format'), accept);
  return {
    where: allOf(conditions),
    fields: fields.length ? fields : null,
    groupBy: selectTerms(lists.group_by, false),
    orderBy: termsOf(lists.order_by).map(orderTerm),
    // An export's own ceiling (SETTLE_EXPORT_MAX_ROWS) is checked where the export is made.
    // An export without a limit holds every matching row (and group), up to its own ceiling.
    limit: format === 'json' ? nonNegativeInteger(scalars, 'limit', DEFAULT_LIMIT, MAX_LIMIT) : nonNegativeInteger(scalars, 'limit', Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
    offset: nonNegativeInteger(scalars, 'offset', 0, Number.MAX_SAFE_INTEGER),
    queryMode: isQueryMode(scalars.get('mode')),
    format,
    limitGiven: scalars.has('limit'),
  };
}

function formatOf(given: string | undefined, accept: string): ExportFormat {
  if (given === undefined) return /(^|,)\s*text\/csv\s*(;|,|$)/i.test(accept) ? 'csv' : 'json';
  if (!FORMATS.has(given as ExportFormat)) throw badParam('format', 'expected json, csv or parquet');
  return given as ExportFormat;
}

function listEntry(key: string, value: string, index: string | undefined): ListEntry {
  return { key, value, index: index ? Number(index) : Number.MAX_SAFE_INTEGER };
}

/** A blank `q=` is what a generic URL builder sends for "no condition"; it is not an error. */
function qCondition(value: string): Expr[] {
  return value.trim() === '' ? [] : [parseQ(value)];
}

function setOnce(scalars: Map<string, string>, key: string, value: string): void {
  if (scalars.has(key)) throw badParam(key, 'given more than once');
  scalars.set(key, value);
}

/** `amount=>100|<5`: the key is the operand, each `|` alternative a comparison, ORed. */
function filterCondition(key: string, value: string): Expr {
  const left = parseOperand(key, 0, key);
  if (left.kind !== 'field' && left.kind !== 'call') throw badParam(key, 'expected a field name or function at position 0');
  const alternatives: Expr[] = value.split('|').map((alternative) => filterComparison(left, alternative));
  return alternatives.length === 1 ? alternatives[0] : { kind: 'or', items: alternatives, pos: 0 };
}

function filterComparison(left: Operand, alternative: string): Expr {
  const [prefix, op] = FILTER_OPERATORS.find(([p]) => alternative.startsWith(p)) ?? ['', '=='];
  const raw = alternative.slice(prefix.length);
  // Values stay strings: only the compiler knows the field's type and coerces ("100" → 100).
  const right: Literal = raw === 'null'
    ? { kind: 'literal', value: null, fromString: false, pos: 0 }
    : { kind: 'literal', value: raw, fromString: true, pos: 0 };
  return { kind: 'cmp', op, left, right, pos: 0 };
}

function selectTerms(entries: ListEntry[], allowDefault: boolean): SelectTerm[] {
  return termsOf(entries).map((term) => ({
    expr: allowDefault && term.text === '*' ? null : termOperand(term),
    source: term.text,
  }));
}

function orderTerm(term: Term): OrderTerm {
  const operand = termOperand(term);
  const source = term.text;
  if (operand.kind !== 'call') return { expr: operand, direction: 'asc', source };
  if (operand.fn === 'asc' || operand.fn === 'desc') {
    if (operand.args.length !== 1) throw badParam(term.key, `expected one expression in ${operand.fn}() at position ${operand.pos}`);
    return { expr: rowCountAware(operand.args[0]), direction: operand.fn, source };
  }
  if (!FUNCTIONS.has(operand.fn)) throw badParam(term.key, `expected asc(...) or desc(...) at position ${operand.pos}`);
  return { expr: operand, direction: 'asc', source };
}

function termOperand(term: Term): Operand {
  return rowCountAware(parseOperand(term.text, term.pos, term.key));
}

/** `count` on its own counts rows (CONTRACT §6); it is not a field named count. */
function rowCountAware(operand: Operand): Operand {
  const isBareCount = operand.kind === 'field' && operand.path.length === 1 && operand.path[0] === 'count';
  return isBareCount ? { kind: 'call', fn: 'count', args: [], pos: operand.pos } : operand;
}

/** Every term of a list parameter, in index order; each value may hold several, comma separated. */
function termsOf(entries: ListEntry[]): Term[] {
  const ordered = [...entries].sort((a, b) => a.index - b.index);
  return ordered.flatMap(({ key, value }) =>
    value.trim() === '' ? [] : splitTerms(value).map((part) => ({ key, ...part })),
  );
}

/** Splits at commas outside parentheses, brackets and quotes: `round(amount, 2),id` is two terms. */
function splitTerms(value: string): Array<{ text: string; pos: number }> {
  const terms = [];
  let depth = 0;
  let quote: string | null = null;
  let start = 0;
  for (let i = 0; i < value.length; i += 1) {
    const ch = value[i];
    if (quote) {
      if (ch === '\\') i += 1;
      else if (ch === quote) quote = null;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '(' || ch === '[') depth += 1;
    else if (ch === ')' || ch === ']') depth -= 1;
    else if (ch === ',' && depth === 0) {
      terms.push(trimmedSlice(value, start, i));
      start = i + 1;
    }
  }
  terms.push(trimmedSlice(value, start, value.length));
  return terms;
}

/** Trimmed text of value[start, end), with the offset where the trimmed text begins. */
function trimmedSlice(value: string, start: number, end: number): { text: string; pos: number } {
  const raw = value.slice(start, end);
  return { text: raw.trim(), pos: start + raw.length - raw.trimStart().length };
}

function nonNegativeInteger(scalars: Map<string, string>, key: string, fallback: number, max: number): number {
  const raw = scalars.get(key);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > max) {
    throw badParam(key, max === Number.MAX_SAFE_INTEGER ? 'expected a non-negative integer' : `expected an integer from 0 to ${max}`);
  }
  return Number(raw);
}

function isQueryMode(mode: string | undefined): boolean {
  if (mode !== undefined && mode !== 'query') throw badParam('mode', 'expected "query"');
  return mode === 'query';
}

function allOf(conditions: Expr[]): Expr | null {
  if (conditions.length <= 1) return conditions[0] ?? null;
  return { kind: 'and', items: conditions, pos: 0 };
}

function badParam(key: string, reason: string): ApiError {
  return badRequest('Invalid query parameter', { [key]: reason });
}
