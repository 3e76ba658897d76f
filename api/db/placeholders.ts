/**
 * Turns the repositories' `?` placeholders into PostgreSQL's `$1, $2, …`, once per distinct SQL
 * text. A `?` inside a string literal, a quoted identifier, a dollar-quoted body or a comment is
 * text, not a placeholder; `\?` is a literal `?` (how a jsonb `?`, `?|` or `?&` operator is
 * written, as with knex). `??` (knex's identifier binding) is refused: nothing here splices names.
 */

export interface Positional {
  /** the SQL with `$n` placeholders */
  text: string;
  /** how many bindings it takes */
  count: number;
}

/** Cached texts at most; past this (dynamic SQL, e.g. lists with many filter shapes) a text is converted on every use. */
const MAX_CACHED = 2000;
const cache = new Map<string, Positional>();

export function positional(sql: string): Positional {
  let found = cache.get(sql);
  if (!found) {
    found = convert(sql);
    if (cache.size < MAX_CACHED) cache.set(sql, found);
  }
  return found;
}

const IDENTIFIER_CHAR = /[A-Za-z0-9_$]/;
const DOLLAR_TAG = /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/;

function convert(sql: string): Positional {
  let out = '';
  let count = 0;
  let i = 0;
  const copyUntil = (end: number) => {
    out += sql.slice(i, end);
    i = end;
  };
  while (i < sql.length) {
    const c = sql[i];
    if (c === '\\' && sql[i + 1] === '?') {
      out += '?';
      i += 2;
    } else if (c === '?') {
      if (sql[i + 1] === '?') throw new Error(`Identifier bindings (??) are not supported: ${sql}`);
      out += `$${++count}`;
      i += 1;
    } else if (c === "'") {
      // E'…' strings take backslash escapes; standard strings only double their quotes.
      const escapes = i > 0 && (sql[i - 1] === 'E' || sql[i - 1] === 'e') && (i < 2 || !IDENTIFIER_CHAR.test(sql[i - 2]));
      copyUntil(endOfQuoted(sql, i, "'", escapes));
    } else if (c === '"') {
      copyUntil(endOfQuoted(sql, i, '"', false));
    } else if (c === '-' && sql[i + 1] === '-') {
      const newline = sql.indexOf('\n', i);
      copyUntil(newline === -1 ? sql.length : newline);
    } else if (c === '/' && sql[i + 1] === '*') {
      copyUntil(endOfComment(sql, i));
    } else if (c === '$' && (i === 0 || !IDENTIFIER_CHAR.test(sql[i - 1])) && DOLLAR_TAG.test(sql.slice(i, i + 64))) {
      const tag = DOLLAR_TAG.exec(sql.slice(i, i + 64))![0];
      const close = sql.indexOf(tag, i + tag.length);
      copyUntil(close === -1 ? sql.length : close + tag.length);
    } else {
      out += c;
      i += 1;
    }
  }
  return { text: out, count };
}

/** The index just past the block comment opened at `start`: PostgreSQL nests them. */
function endOfComment(sql: string, start: number): number {
  let depth = 0;
  let i = start;
  while (i < sql.length) {
    if (sql[i] === '/' && sql[i + 1] === '*') {
      depth += 1;
      i += 2;
    } else if (sql[i] === '*' && sql[i + 1] === '/') {
      depth -= 1;
      i += 2;
      if (depth === 0) return i;
    } else {
      i += 1;
    }
  }
  return sql.length;
}

/** The index just past the quote that closes the one at `start`. */
function endOfQuoted(sql: string, start: number, quote: string, backslashEscapes: boolean): number {
  let i = start + 1;
  while (i < sql.length) {
    const c = sql[i];
    if (backslashEscapes && c === '\\') i += 2;
    else if (c === quote && sql[i + 1] === quote) i += 2;
    else if (c === quote) return i + 1;
    else i += 1;
  }
  return sql.length;
}
