/**
 * The `q` language (CONTRACT §5): `amount > 100 && (status.value == "processed" || !is_test)`.
 * A small on-demand tokenizer feeds a recursive-descent parser. Tokens are read lazily, one at a
 * time, because two spots are not token sequences: bare dates (`date(2024-01-31 10:20:30)`) and
 * bracketed path segments (`attrs[my-region]`); those are read as raw text.
 */
import { isForbiddenKey } from '../untrustedInput.ts';
import { badRequest, type ApiError } from '../errors.ts';
import type { Call, CompareOp, DateLiteral, Expr, FieldRef, Literal, Not, Operand } from './ast.ts';

const MAX_LENGTH = 4096;
const MAX_DEPTH = 64;

const COMPARE_OPS: readonly CompareOp[] = ['==', '!=', '>=', '<=', '>', '<', '?'];
const TWO_CHAR_SYMBOLS = new Set(['==', '!=', '>=', '<=', '&&', '||']);
const ONE_CHAR_SYMBOLS = new Set(['>', '<', '?', '!', '(', ')', ',', '.', '[', ']']);
const KEYWORDS = new Map<string, boolean | null>([['true', true], ['false', false], ['null', null]]);
const QUOTES = new Set(['"', "'"]);

const IDENT = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER = /-?\d+(?:\.\d+)?/y;
const HEX4 = /[0-9A-Fa-f]{4}/y;
const DOT_SEGMENT = /[A-Za-z0-9_]+/y;
// Custom attribute names are the client's own, so a bracket segment takes more than identifiers.
const BARE_SEGMENT = /[^[\]\s'"]+/y;
// Wide enough for every date format the compiler accepts (ISO-8601, `1/31/2024 10:00:00 AM`).
const RAW_DATE = /\d[0-9A-Za-z:./+\- ]*/y;

const JSON_ESCAPES = new Map([['"', '"'], ['\\', '\\'], ['/', '/'], ['b', '\b'], ['f', '\f'], ['n', '\n'], ['r', '\r'], ['t', '\t']]);
const SINGLE_QUOTE_ESCAPES = new Map([["'", "'"], ['\\', '\\'], ['n', '\n'], ['r', '\r'], ['t', '\t']]);

interface Token {
  kind: 'ident' | 'number' | 'string' | 'symbol' | 'end';
  /** the name, digits or symbol as written; for a string, its decoded value */
  text: string;
  start: number;
  end: number;
}

/** A syntax error at a position local to the text being parsed; turned into a 400 at the edge. */
class SyntaxProblem extends Error {
  readonly at: number;

  constructor(message: string, at: number) {
    super(message);
    this.at = at;
  }
}

/** Parses a whole `q` expression. */
export function parseQ(text: string): Expr {
  const fail = (message: string) => badRequest('Invalid q expression', { q: message });
  return parseWhole(text, 0, fail, (parser) => parser.condition());
}

/**
 * Parses one operand filling all of `text`: a field path, function call or literal, as used in
 * `fields`, `group_by`, `order_by` terms and filter keys. `pos` is where `text` starts inside the
 * parameter value it was cut from, so positions in nodes and errors point into that value.
 * Errors name `param` in their details.
 */
export function parseOperand(text: string, pos = 0, param = 'expression'): Operand {
  const fail = (message: string) => badRequest('Invalid query parameter', { [param]: message });
  return parseWhole(text, pos, fail, (parser) => parser.operand('expected a field name'));
}

function parseWhole<T>(text: string, offset: number, fail: (message: string) => ApiError, read: (parser: Parser) => T): T {
  try {
    if (text.length > MAX_LENGTH) throw new SyntaxProblem(`expression longer than ${MAX_LENGTH} characters`, MAX_LENGTH);
    const parser = new Parser(text, offset);
    const result = read(parser);
    parser.expectEnd();
    return result;
  } catch (err) {
    if (err instanceof SyntaxProblem) throw fail(`${err.message} at position ${offset + err.at}`);
    throw err;
  }
}

class Parser {
  readonly src: string;
  readonly offset: number;
  pos = 0;
  depth = 0;
  #peeked: { from: number; token: Token } | null = null;

  constructor(src: string, offset: number) {
    this.src = src;
    this.offset = offset;
  }

  /** `a || b`: the loosest binding level. */
  condition(): Expr {
    return this.junction('||', 'or', () => this.conjunction());
  }

  conjunction(): Expr {
    return this.junction('&&', 'and', () => this.unary());
  }

  junction(symbol: string, kind: 'and' | 'or', next: () => Expr): Expr {
    const items = [next()];
    while (isSymbol(this.peek(), symbol)) {
      this.next();
      items.push(next());
    }
    return items.length === 1 ? items[0] : { kind, items, pos: items[0].pos };
  }

  unary(): Expr {
    const tok = this.peek();
    if (isSymbol(tok, '!')) return this.negation();
    if (isSymbol(tok, '(')) return this.group();
    return this.comparison();
  }

  negation(): Not {
    const bang = this.next();
    const expr = this.nested(bang, () => this.negated(bang));
    return { kind: 'not', expr, pos: this.at(bang.start) };
  }

  /**
   * `!` binds tighter than comparison, so `!a == 1` would compare a negated value, which the AST
   * cannot express; it is refused rather than silently read as `!(a == 1)`.
   */
  negated(bang: Token): Expr {
    const tok = this.peek();
    if (isSymbol(tok, '!')) return this.negation();
    if (isSymbol(tok, '(')) return this.group();
    const operand = this.operand(null);
    if (compareOp(this.peek())) throw new SyntaxProblem('expected parentheses around a negated comparison', bang.start);
    return { kind: 'truthy', operand, pos: operand.pos };
  }

  group(): Expr {
    const open = this.next();
    return this.nested(open, () => {
      const expr = this.condition();
      this.expect(')');
      return expr;
    });
  }

  comparison(): Expr {
    const left = this.operand(null);
    const op = compareOp(this.peek());
    if (!op) return { kind: 'truthy', operand: left, pos: left.pos };
    this.next();
    const right = this.operand('expected a value');
    return { kind: 'cmp', op, left, right, pos: left.pos };
  }

  /** `whenMissing` is the message when no operand starts here; null reports the token found. */
  operand(whenMissing: string | null): Operand {
    const tok = this.peek();
    if (tok.kind === 'ident') return this.named(this.next());
    if (tok.kind === 'string') return this.literal(this.next().text, true, tok);
    if (tok.kind === 'number') return { ...this.literal(Number(this.next().text), false, tok), text: tok.text };
    throw new SyntaxProblem(whenMissing ?? unexpected(tok), tok.start);
  }

  literal(value: Literal['value'], fromString: boolean, tok: Token): Literal {
    return { kind: 'literal', value, fromString, pos: this.at(tok.start) };
  }

  named(name: Token): Operand {
    if (KEYWORDS.has(name.text)) return this.literal(KEYWORDS.get(name.text) ?? null, false, name);
    if (isSymbol(this.peek(), '(')) return this.call(name);
    return this.fieldPath(name);
  }

  call(name: Token): Call | DateLiteral {
    const open = this.next();
    return this.nested(open, () => {
      if (name.text === 'date' && this.startsDateLiteral()) return this.dateLiteral(name);
      return { kind: 'call', fn: name.text, args: this.callArguments(), pos: this.at(name.start) };
    });
  }

  callArguments(): Operand[] {
    const args: Operand[] = [];
    if (isSymbol(this.peek(), ')')) {
      this.next();
      return args;
    }
    for (;;) {
      args.push(this.operand('expected a value'));
      const separator = this.next();
      if (isSymbol(separator, ')')) return args;
      if (!isSymbol(separator, ',')) throw new SyntaxProblem('expected "," or ")"', separator.start);
    }
  }

  /** `date(created_at)` is the date function; a digit or a quote after `(` makes a date literal. */
  startsDateLiteral(): boolean {
    const first = this.src[skipSpace(this.src, this.pos)] ?? '';
    return QUOTES.has(first) || (first >= '0' && first <= '9');
  }

  dateLiteral(name: Token): DateLiteral {
    const tok = this.peek();
    let value: string;
    if (tok.kind === 'string') {
      value = this.next().text;
    } else {
      value = matchAt(RAW_DATE, this.src, tok.start) ?? '';
      this.pos = tok.start + value.length;
    }
    this.expect(')');
    return { kind: 'date', value: value.trim(), pos: this.at(name.start) };
  }

  fieldPath(name: Token): FieldRef {
    const path = [name.text];
    // Segments must follow without spaces: `a .b` is two things, not a path.
    for (let ch = this.src[this.pos]; ch === '.' || ch === '['; ch = this.src[this.pos]) {
      path.push(ch === '.' ? this.dotSegment() : this.bracketSegment());
    }
    // Paths are later walked through rendered objects: a prototype-reaching name is never a field.
    if (path.some(isForbiddenKey)) throw new SyntaxProblem(`"${path.join('.')}" is not a field name`, name.start);
    return { kind: 'field', path, pos: this.at(name.start) };
  }

  dotSegment(): string {
    const start = this.pos + 1;
    const segment = matchAt(DOT_SEGMENT, this.src, start);
    if (!segment) throw new SyntaxProblem('expected a name after "."', start);
    this.pos = start + segment.length;
    return segment;
  }

  bracketSegment(): string {
    const { name, end } = this.segmentName(this.pos + 1);
    if (this.src[end] !== ']') throw new SyntaxProblem('expected "]"', end);
    this.pos = end + 1;
    return name;
  }

  segmentName(start: number): { name: string; end: number } {
    if (QUOTES.has(this.src[start])) {
      const tok = readString(this.src, start);
      return { name: tok.text, end: tok.end };
    }
    const name = matchAt(BARE_SEGMENT, this.src, start);
    if (!name) throw new SyntaxProblem('expected a name', start);
    return { name, end: start + name.length };
  }

  nested<T>(tok: Token, parse: () => T): T {
    this.depth += 1;
    if (this.depth > MAX_DEPTH) throw new SyntaxProblem(`nesting deeper than ${MAX_DEPTH}`, tok.start);
    const result = parse();
    this.depth -= 1;
    return result;
  }

  expect(symbol: string): void {
    const tok = this.peek();
    if (!isSymbol(tok, symbol)) throw new SyntaxProblem(`expected "${symbol}"`, tok.start);
    this.next();
  }

  expectEnd(): void {
    const tok = this.peek();
    if (tok.kind !== 'end') throw new SyntaxProblem(unexpected(tok), tok.start);
  }

  peek(): Token {
    if (this.#peeked?.from !== this.pos) this.#peeked = { from: this.pos, token: lexToken(this.src, this.pos) };
    return this.#peeked.token;
  }

  next(): Token {
    const tok = this.peek();
    this.pos = tok.end;
    return tok;
  }

  at(localPos: number): number {
    return this.offset + localPos;
  }
}

function lexToken(src: string, from: number): Token {
  const start = skipSpace(src, from);
  const ch = src[start];
  if (ch === undefined) return { kind: 'end', text: '', start, end: start };
  if (QUOTES.has(ch)) return readString(src, start);
  const ident = matchAt(IDENT, src, start);
  if (ident) return { kind: 'ident', text: ident, start, end: start + ident.length };
  const number = matchAt(NUMBER, src, start);
  if (number) return { kind: 'number', text: number, start, end: start + number.length };
  const pair = src.slice(start, start + 2);
  if (TWO_CHAR_SYMBOLS.has(pair)) return { kind: 'symbol', text: pair, start, end: start + 2 };
  if (ONE_CHAR_SYMBOLS.has(ch)) return { kind: 'symbol', text: ch, start, end: start + 1 };
  throw new SyntaxProblem(`unexpected ${JSON.stringify(ch)}`, start);
}

/** Double quotes take JSON escapes; single quotes take backslash escapes. */
function readString(src: string, start: number): Token {
  const quote = src[start];
  const unescape = quote === '"' ? jsonEscape : singleQuoteEscape;
  let text = '';
  let i = start + 1;
  while (i < src.length && src[i] !== quote) {
    if (src[i] !== '\\') {
      text += src[i];
      i += 1;
    } else if (i + 1 < src.length) {
      const [decoded, length] = unescape(src, i);
      text += decoded;
      i += length;
    } else {
      break;
    }
  }
  if (src[i] !== quote) throw new SyntaxProblem('unterminated string', start);
  return { kind: 'string', text, start, end: i + 1 };
}

function jsonEscape(src: string, at: number): [string, number] {
  const escape = src[at + 1];
  const simple = JSON_ESCAPES.get(escape);
  if (simple !== undefined) return [simple, 2];
  const hex = escape === 'u' ? matchAt(HEX4, src, at + 2) : null;
  if (hex) return [String.fromCharCode(parseInt(hex, 16)), 6];
  throw new SyntaxProblem('invalid escape', at);
}

function singleQuoteEscape(src: string, at: number): [string, number] {
  const escape = src[at + 1];
  // Unknown escapes keep their backslash, so a LIKE pattern's `\*` reaches the compiler intact.
  return [SINGLE_QUOTE_ESCAPES.get(escape) ?? `\\${escape}`, 2];
}

function skipSpace(src: string, from: number): number {
  let i = from;
  while (i < src.length && /\s/.test(src[i])) i += 1;
  return i;
}

function matchAt(pattern: RegExp, src: string, at: number): string | null {
  pattern.lastIndex = at;
  return pattern.exec(src)?.[0] ?? null;
}

function isSymbol(tok: Token, symbol: string): boolean {
  return tok.kind === 'symbol' && tok.text === symbol;
}

function compareOp(tok: Token): CompareOp | undefined {
  return tok.kind === 'symbol' ? COMPARE_OPS.find((op) => op === tok.text) : undefined;
}

function unexpected(tok: Token): string {
  if (tok.kind === 'end') return 'unexpected end of input';
  if (tok.kind === 'string') return 'unexpected string';
  return `unexpected ${JSON.stringify(tok.text)}`;
}
