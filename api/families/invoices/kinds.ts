/**
 * Helpers the billing families share: a free-text `type`, and calendar dates.
 *
 * The engine resolves a create's `type` from the body against the family's kinds (the `type`
 * column). Invoices, line items, billing schedules and charges take `type` as free text in v1
 * (`bill`, `item1`, `subscription`, `option_1`), kept in a field of its own; for the engine's
 * resolution every such value names the family's one stored kind.
 */
import type { FieldSpec } from '../../engine/family.ts';
import { parseDateTime } from '../../schema/values.ts';

/** A rename table under which any value a client sends stands for `kind`. */
export function everyValueIs(kind: string): Record<string, string> {
  return new Proxy({}, { get: (_target, key) => (typeof key === 'string' ? kind : undefined) });
}

/** The hidden `type` column field of a family whose client-facing `type` is free text. */
export function freeTextKind(kind: string, renames: Partial<Record<'v1' | 'v2', Record<string, string>>> = {}): FieldSpec {
  return { store: 'type', type: 'string', values: { v1: renames.v1 ?? everyValueIs(kind), v2: renames.v2 ?? everyValueIs(kind) } };
}

/** `2024-08-21`, `2024-08-21 10:00:00`, ISO-8601 or `8/21/2024` → `2024-08-21` (UTC); null when none fits. */
export function toCalendarDate(input: unknown): string | null {
  if (typeof input !== 'string') return null;
  const parsed = parseDateTime(input);
  return parsed ? parsed.toISOString().slice(0, 10) : null;
}

/** Today's date (UTC) as `YYYY-MM-DD`. */
export function calendarDate(now: Date): string {
  return now.toISOString().slice(0, 10);
}
