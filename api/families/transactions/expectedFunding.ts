/**
 * The funding fields (fee, or conv_fee for a payer who pays it, funding status and date) that a
 * card payment's statement is expected to add to its row, worked out in the plan from what the
 * plan holds: the row, its processing account and the date. The statement stays their author: it
 * computes them with `transaction_funding_fields_of` (migration 20261207002200), from the database's
 * clock and the tenant's test clock. What is worked out here only lets the payment's audit event be
 * built whole by the web (api/db/auditStatement.ts): when the stored row holds exactly the fields
 * sent and these, the database takes the event as built, the path of every other create; when they
 * differ (a test clock, a date that turned between the plan and the statement, an account the plan
 * did not read), it rebuilds the changes itself, exact. So a difference between this and the SQL
 * costs time, never a wrong row or event; test/expected-funding.test.ts compares both.
 */
import type { StoredObject } from '../../engine/family.ts';

type Data = Record<string, unknown>;

const FUNDED_TYPES = new Set(['payment', 'refund', 'payout', 'chargeback', 'chargeback_reversal']);
const DAY_MS = 86_400_000;
/** Business days of delay past which this does not tell (validation allows up to 10). */
const MAX_DELAY = 3_650;

/** A whole number as `(text)::int` or `::bigint` reads a JSON value's text, or null for none; undefined when the cast would not give exactly this. */
function wholeNumber(value: unknown): number | null | undefined {
  if (value === undefined || value === null) return null;
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : undefined;
  return typeof value === 'string' && /^-?\d{1,9}$/.test(value) ? Number(value) : undefined;
}

/** `transaction_fee`: sandbox pricing in minor units, half away from zero as numeric `round`; only for a non-negative amount. */
function transactionFee(kind: string, methodType: unknown, amount: number): number {
  if (kind !== 'payment') return 0;
  if (methodType === 'bank_account') return Math.min(Math.floor((amount + 50) / 100), 500);
  return Math.floor((amount * 29 + 500) / 1000) + 30;
}

/** `add_business_days`: Mon–Fri business days after a date (UTC days since the epoch); a weekend start counts from the Friday before. */
function addBusinessDays(start: Date, days: number): Date {
  if (days <= 0) return start;
  const weekday = start.getUTCDay() || 7;
  const shifted = -Math.max(weekday - 5, 0) + days + 2 * Math.floor((Math.min(weekday, 5) - 1 + days) / 5);
  return new Date(start.getTime() + shifted * DAY_MS);
}

/** The fields the statement adds to `row` on the UTC date of `now`, with its processing account's data, or null when it adds none or this cannot tell. */
export function expectedFunding(row: Pick<StoredObject, 'type' | 'data'>, account: Data | undefined, now: Date): Data | null {
  const data = row.data;
  const amount = wholeNumber(data.amount);
  if (!FUNDED_TYPES.has(row.type) || amount === null || amount === undefined || amount === 0) return null;
  if (data.status !== 'processed' || (data.funding_status !== undefined && data.funding_status !== null)) return null;
  if (amount < 0 || !account) return null;
  const ownDelay = wholeNumber(data.funding_delay);
  const processing = account.processing as { funding?: { delay?: unknown } } | undefined;
  const accountDelay = wholeNumber(processing?.funding?.delay);
  if (ownDelay === undefined || (ownDelay === null && accountDelay === undefined)) return null;
  const instant = data.funding_timing === 'rapid' || data.funding_timing === 'instant';
  const delay = instant ? 0 : ownDelay ?? accountDelay ?? 2;
  // Validation keeps delays within days; a date beyond JavaScript's range is the database's alone.
  if (delay > MAX_DELAY) return null;
  const today = new Date(Math.floor(now.getTime() / DAY_MS) * DAY_MS);
  const fee = transactionFee(row.type, data.payment_method_type, amount);
  const payerPays = String(data.conv_fee_payer) === 'true';
  return {
    fee: payerPays ? 0 : fee,
    funding_status: 'pending',
    funding_date: addBusinessDays(today, delay).toISOString().slice(0, 10),
    ...(payerPays ? { conv_fee: fee } : {}),
  };
}
