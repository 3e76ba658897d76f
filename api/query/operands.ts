/** Operand helpers both compilers (Postgres, ClickHouse) share, so they read the AST alike. */
import { invalidAttributes } from '../errors.ts';
import { decimalToMinor, parseDateTime } from '../schema/values.ts';
import type { Literal, Operand } from './ast.ts';

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


/**
 * A literal compared with money, in minor units: read from its text as written (`1.005` is
 * 1.01, never a float times 100), rounded half-up to the cent as stored amounts are.
 */
export function moneyLiteral(node: Literal, bad: (reason: string) => Error): number {
  const written = node.text ?? node.value;
  const minor = typeof written === 'number' || typeof written === 'string' ? decimalToMinor(written) : null;
  if (minor === null) throw bad('Must be an amount');
  return minor;
}
