/** Operand helpers both compilers (Postgres, ClickHouse) share, so they read the AST alike. */
import { badRequest, invalidAttributes } from '../errors.ts';
import { decimalToMinor, parseDateTime } from '../schema/values.ts';
import type { Literal, Operand } from './ast.ts';
import { category, type ValueType } from './functions.ts';

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

/** The text a client wrote for an operand, for error details. */
export function describeOperand(node: Operand): string {
  switch (node.kind) {
    case 'field': return node.path.join('.');
    case 'call': return `${node.fn}(${node.args.map(describeOperand).join(', ')})`;
    case 'date': return `date(${node.value})`;
    case 'literal': return JSON.stringify(node.value);
  }
}

/** A bare operand used as a condition must be true/false itself: anything else is compared. */
export function notACondition(node: Operand): Error {
  return badRequest('Expected a condition', { q: `${describeOperand(node)} is not true/false; compare it with a value` });
}

/** A date literal compares only with a time: text, numbers and flags are not dates. */
export function checkDateAgainst(type: ValueType, node: Operand): void {
  if (category(type) !== 'time') throw badRequest('Cannot compare values of different types', { q: `${describeOperand(node)} compared with a ${type}` });
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
