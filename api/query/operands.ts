/** Operand helpers both compilers (Postgres, ClickHouse) share, so they read the AST alike. */
import { invalidAttributes } from '../errors.ts';
import { parseDateTime } from '../schema/values.ts';
import type { Operand } from './ast.ts';

export function isLiteralLike(node: Operand): boolean {
  return node.kind === 'literal' || node.kind === 'date';
}

/** `5 < amount` is `amount > 5`: the field goes left so the literal is typed by it. */
export function flip<T extends string>(op: T): T {
  return (({ '<': '>', '>': '<', '<=': '>=', '>=': '<=' } as Record<string, string>)[op] ?? op) as T;
}

export function toDate(value: unknown, name: string): Date {
  const date = typeof value === 'string' ? parseDateTime(value) : null;
  if (!date) throw invalidAttributes({ [name]: 'Must be a date (YYYY-MM-DD, YYYY-MM-DD HH:MM:SS, ISO-8601 or M/D/YYYY)' });
  return date;
}

