/**
 * Client input is data, never prototype. Every key a client chooses (body keys at any depth,
 * form keys, query field paths) is checked here before any code writes through it: the names
 * that reach an object's prototype are refused, and nesting and list sizes are bounded so that
 * no recursive walk (serialising, hashing, cloning) can exhaust the stack.
 */
import { badRequest } from './errors.ts';

/** Keys that address an object's prototype machinery instead of its data. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Deepest nesting of objects and lists a body may have. */
export const MAX_INPUT_DEPTH = 64;
/** Longest list a body may hold (bulk requests take at most 1,000 objects). */
export const MAX_LIST_LENGTH = 1000;

export function isForbiddenKey(key: string): boolean {
  return FORBIDDEN_KEYS.has(key);
}

/** A key is refused when it, or any dotted/bracketed segment of it (`__proto__.x`, `a[constructor]`), is forbidden. */
export function hasForbiddenSegment(key: string): boolean {
  if (FORBIDDEN_KEYS.has(key)) return true;
  return key.split(/[.[\]]/).some((segment) => FORBIDDEN_KEYS.has(segment));
}

function refuse(path: string, reason: string): never {
  throw badRequest(`${path || 'body'}: ${reason}`, { [path || 'body']: reason });
}

/**
 * Checks a decoded body: no forbidden key anywhere, at most MAX_INPUT_DEPTH levels, lists of at
 * most MAX_LIST_LENGTH items. Iterative, so a hostile depth cannot overflow the stack here.
 */
export function assertSafeInput(root: unknown): void {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: root, path: '', depth: 0 }];
  while (stack.length) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (depth > MAX_INPUT_DEPTH) refuse(path, `Nested deeper than ${MAX_INPUT_DEPTH} levels`);
    if (Array.isArray(value)) {
      if (value.length > MAX_LIST_LENGTH) refuse(path, `At most ${MAX_LIST_LENGTH} items`);
      value.forEach((item, i) => stack.push({ value: item, path: `${path}[${i}]`, depth: depth + 1 }));
      continue;
    }
    for (const key of Object.keys(value)) {
      const itemPath = path ? `${path}[${key}]` : key;
      if (hasForbiddenSegment(key)) refuse(itemPath, 'Not allowed as a key');
      stack.push({ value: (value as Record<string, unknown>)[key], path: itemPath, depth: depth + 1 });
    }
  }
}

/** Form and multipart keys are checked raw, before qs (which would drop some of them silently). */
export function assertSafeKeys(keys: Iterable<string>): void {
  for (const key of keys) if (hasForbiddenSegment(key)) refuse(key, 'Not allowed as a key');
}
