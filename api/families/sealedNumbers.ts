/**
 * Tax numbers (EIN, SSN, tax ids) at rest: sealed by the vault like card numbers, shown masked
 * (`xxxxx6789`). A masked value coming back unchanged is the stored number, not a new one.
 */
import type { RuleContext } from '../engine/family.ts';
import { getPath, isPlainObject, setPath, type Json } from '../engine/view.ts';
import { parseDateTime } from '../schema/values.ts';
import { mask } from './payment_methods/numbers.ts';

/** A sealed number as stored: what the API shows, and the ciphertext. */
export interface SealedNumber {
  value: string;
  sealed: string;
}

/**
 * Seals the number at `path` (a stored object like `tax_id`) in `data` when it is new or changed.
 * Returns a reason for `details` when it is malformed, or null.
 */
export function sealNumberAt(ctx: RuleContext, data: Json, previous: Json | null, path: string): string | null {
  const given = getPath(data, path);
  if (!isPlainObject(given) || given.value === undefined) return null;
  if (given.value === null) {
    setPath(data, path, { value: null }); // cleared: the sealed number goes too
    return null;
  }
  const before = previous ? getPath(previous, path) : undefined;
  if (isPlainObject(before) && before.value === given.value && typeof before.sealed === 'string') {
    setPath(data, path, { ...before });
    return null;
  }
  const digits = String(given.value).replace(/[\s-]/g, '');
  if (!/^\d{4,15}$/.test(digits)) return 'Must be 4 to 15 digits';
  const sealed: SealedNumber = { value: mask(digits), sealed: ctx.domain.vault.encrypt(digits) };
  setPath(data, path, sealed);
  return null;
}

/** A date given as YYYY-MM-DD, M/D/YYYY or ISO-8601, stored as YYYY-MM-DD; a reason when unreadable. */
export function normaliseDateAt(data: Json, path: string): string | null {
  const given = getPath(data, path);
  if (given === undefined || given === null) return null;
  const date = typeof given === 'string' ? parseDateTime(given) : null;
  if (!date) return 'Must be a date (YYYY-MM-DD or M/D/YYYY)';
  setPath(data, path, date.toISOString().slice(0, 10));
  return null;
}
