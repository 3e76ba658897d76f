/**
 * What a rotation's request says (a webhook's signing secret, a key): which fields it may carry,
 * and how long the old secret keeps working — the same bounds for both.
 */
import { invalidAttributes } from '../errors.ts';

/** The longest overlap a rotation allows: a week. */
export const MAX_OVERLAP_SECONDS = 7 * 24 * 3600;
const DEFAULT_OVERLAP_SECONDS = 24 * 3600;

/** Seconds the old secret keeps working: a whole number from 0 to a week, a day when absent (form values arrive as text). */
export function overlapSeconds(given: unknown, field: string): number {
  if (given === undefined || given === null || given === '') return DEFAULT_OVERLAP_SECONDS;
  const seconds = typeof given === 'string' && /^\d+$/.test(given.trim()) ? Number(given) : given;
  if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < 0 || seconds > MAX_OVERLAP_SECONDS) {
    throw invalidAttributes({ [field]: `Must be a whole number of seconds from 0 to ${MAX_OVERLAP_SECONDS}` });
  }
  return seconds;
}

export function refuseUnknown(body: Record<string, unknown>, known: string[]): void {
  const unknown = Object.keys(body).filter((k) => !known.includes(k));
  if (unknown.length) throw invalidAttributes(Object.fromEntries(unknown.map((k) => [k, 'Unknown field'])));
}
