/**
 * Value conversions at the edge: client values (JSON or form strings) into stored values, and
 * stored values into what the API shows. Money is integer minor units inside; decimals only here.
 */
import type { FieldSpec, Version } from './fields.ts';

export const MAX_MONEY_MINOR = 1e12 * 100;
export const MUST_BE_POSITIVE = 'Must be greater than 0';

/** A reason string for `details`, or the converted value. */
export type Converted = { ok: true; value: unknown } | { ok: false; reason: string };

const ok = (value: unknown): Converted => ({ ok: true, value });
const fail = (reason: string): Converted => ({ ok: false, reason });

/**
 * "10.50" / 10.5 → 1050. More than two decimals are rounded half-up to the cent on the decimal
 * text, never through float arithmetic (client libraries send `rand * 1000`; CONTRACT §1).
 * Refuses negatives, zero (also after rounding; unless `zero` allows it), NaN and > 1e12.
 */
export function parseMoney(input: unknown, zero = false): Converted {
  const minor = typeof input === 'number' || typeof input === 'string' ? decimalToMinor(input) : null;
  if (minor === null || minor < 0) return fail('Must be a positive amount');
  if (minor === 0 && !zero) return fail(MUST_BE_POSITIVE);
  if (minor > MAX_MONEY_MINOR) return fail('Must not exceed 1000000000000');
  return ok(minor);
}

const DECIMAL = /^(-?)(\d{1,13})(?:\.(\d{1,40}))?$/;

/**
 * A decimal amount in minor units, rounded half away from zero to the cent on its text (1.005 →
 * 101, -1.005 → -101), as every amount is read: stored on create and written in a query alike.
 * Null when it is not a plain decimal of at most 13 whole digits (so the cents stay exact).
 */
export function decimalToMinor(input: number | string): number | null {
  const text = typeof input === 'number' ? numberToPlainText(input) : input.trim();
  const match = text === null ? null : DECIMAL.exec(text);
  if (!match) return null;
  const [, sign, whole, fraction = ''] = match;
  const roundUp = fraction.length > 2 && fraction[2] >= '5' ? 1 : 0;
  const minor = Number(whole) * 100 + Number(fraction.slice(0, 2).padEnd(2, '0')) + roundUp;
  return sign === '-' && minor !== 0 ? -minor : minor;
}

function numberToPlainText(value: number): string | null {
  if (!Number.isFinite(value)) return null;
  // 10.5 → "10.5"; a float that prints as 1e21 or 1e-7 is not a plain decimal.
  return String(value);
}

export function formatMoney(minor: number): number {
  return minor / 100;
}

/** UTC "YYYY-MM-DD HH:MM:SS", the wire form of every timestamp. */
export function formatTimestamp(value: Date | string): string {
  const date = value instanceof Date ? value : new Date(value);
  return date.toISOString().slice(0, 19).replace('T', ' ');
}

const DATE_FORMS: Array<[RegExp, (m: RegExpExecArray) => string]> = [
  [/^(\d{4})-(\d{2})-(\d{2})$/, (m) => `${m[1]}-${m[2]}-${m[3]}T00:00:00Z`],
  [/^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/, (m) =>
    `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6] ?? '00'}${m[7] ?? ''}${m[8] ?? 'Z'}`],
  [/^(\d{1,2})\/(\d{1,2})\/(\d{4})(?: (\d{1,2}):(\d{2})(?::(\d{2}))?(?: ?([AaPp][Mm]))?)?$/, (m) => {
    let hour = Number(m[4] ?? 0);
    const meridiem = m[7]?.toLowerCase();
    if (meridiem === 'pm' && hour < 12) hour += 12;
    if (meridiem === 'am' && hour === 12) hour = 0;
    const pad = (n: number | string) => String(n).padStart(2, '0');
    return `${m[3]}-${pad(m[1])}-${pad(m[2])}T${pad(hour)}:${m[5] ?? '00'}:${m[6] ?? '00'}Z`;
  }],
];

/** Accepts YYYY-MM-DD, YYYY-MM-DD HH:MM:SS, ISO-8601 and M/D/YYYY[ h:mm:ss AM]; null when none fits. */
export function parseDateTime(text: string): Date | null {
  for (const [pattern, toIso] of DATE_FORMS) {
    const match = pattern.exec(text.trim());
    if (!match) continue;
    const date = new Date(toIso(match));
    return Number.isNaN(date.getTime()) ? null : date;
  }
  return null;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Converts one client value for a field of the given version into its stored form. */
export function toStored(field: FieldSpec, version: Version, input: unknown): Converted {
  if (input === null) return field.required ? fail('Required') : ok(null);
  switch (field.type) {
    case 'money':
      // `min: 0` lets a money field hold zero; its family's rules say when zero stands.
      return parseMoney(input, field.min === 0);
    case 'integer':
    case 'number':
      return toNumber(field, input);
    case 'boolean':
      return toBoolean(input);
    case 'json':
      return toJson(field, input);
    case 'list':
      return toList(input);
    case 'datetime': {
      const date = typeof input === 'string' ? parseDateTime(input) : null;
      return date ? ok(date.toISOString()) : fail('Must be a date and time');
    }
    default:
      return toText(field, version, input);
  }
}

function toNumber(field: FieldSpec, input: unknown): Converted {
  const value = typeof input === 'number' ? input : typeof input === 'string' && input.trim() !== '' ? Number(input) : NaN;
  if (!Number.isFinite(value)) return fail('Must be a number');
  if (field.type === 'integer' && !Number.isInteger(value)) return fail('Must be an integer');
  if (field.min !== undefined && value < field.min) return fail(`Must be at least ${field.min}`);
  if (field.max !== undefined && value > field.max) return fail(`Must be at most ${field.max}`);
  return ok(value);
}

function toBoolean(input: unknown): Converted {
  if (typeof input === 'boolean') return ok(input);
  if (input === 'true' || input === '1') return ok(true);
  if (input === 'false' || input === '0') return ok(false);
  return fail('Must be true or false');
}

function toJson(field: FieldSpec, input: unknown): Converted {
  if (typeof input !== 'object' || Array.isArray(input)) return fail('Must be an object');
  const size = Buffer.byteLength(JSON.stringify(input));
  if (field.maxLength !== undefined && size > field.maxLength) return fail(`Must be at most ${field.maxLength} bytes serialized`);
  return ok(input);
}

/** A list of objects; form bodies give `values[0][x]` as an array already (qs). A lone object is a one-item list. */
function toList(input: unknown): Converted {
  if (typeof input === 'object' && input !== null && !Array.isArray(input)) input = [input];
  if (!Array.isArray(input)) return fail('Must be a list');
  if (input.length > 100) return fail('At most 100 items');
  if (!input.every((item) => typeof item === 'object' && item !== null && !Array.isArray(item))) return fail('Each item must be an object');
  return ok(input);
}

function toText(field: FieldSpec, version: Version, input: unknown): Converted {
  if (typeof input !== 'string' && typeof input !== 'number') return fail('Must be a string');
  const text = String(input);
  if (text.length > (field.maxLength ?? 1024)) return fail(`Must be at most ${field.maxLength ?? 1024} characters`);
  if (field.type === 'email' && !EMAIL.test(text)) return fail('Must be an email address');
  if (field.pattern && !field.pattern.match.test(text)) return fail(field.pattern.reason);
  if (field.enum && !acceptedValues(field, version).includes(text)) return fail(`Must be one of: ${acceptedValues(field, version).join(', ')}`);
  return ok(field.values?.[version]?.[text] ?? text);
}

/** The values a client of this version may send for an enum field. */
export function acceptedValues(field: FieldSpec, version: Version): string[] {
  const renames = field.values?.[version] ?? {};
  const renamedStored = new Set(Object.values(renames));
  return [...Object.keys(renames), ...(field.enum ?? []).filter((v) => !renamedStored.has(v))];
}

/** The API form of a stored value for a version. */
export function toApi(field: FieldSpec, version: Version, stored: unknown): unknown {
  if (stored === null || stored === undefined) return null;
  if (field.type === 'money') return formatMoney(Number(stored));
  if (field.type === 'datetime') return formatTimestamp(stored as string | Date);
  const renames = field.values?.[version];
  if (renames && typeof stored === 'string') return apiNames(renames).get(stored) ?? stored;
  return stored;
}

const apiNamesByRenames = new WeakMap<Record<string, string>, Map<string, string>>();

/** A version's renames turned around (stored value → API value), made once; the first API value wins. */
function apiNames(renames: Record<string, string>): Map<string, string> {
  let names = apiNamesByRenames.get(renames);
  if (!names) {
    names = new Map();
    for (const [apiValue, storedValue] of Object.entries(renames)) if (!names.has(storedValue)) names.set(storedValue, apiValue);
    apiNamesByRenames.set(renames, names);
  }
  return names;
}
