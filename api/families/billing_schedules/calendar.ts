/**
 * The billing dates of a schedule (CONTRACT §12), pure: every date in a window on which its
 * recurrence falls. Dates are UTC calendar dates `YYYY-MM-DD`; a billing day past the end of a
 * month falls on the month's last day (billing day 31 in February bills on the 28th or 29th).
 *
 *   daily      every day from the start date
 *   weekly     every 7 days from the start date; biweekly every 14
 *   monthly    monthly.billing_day (default: the start date's day) of every month
 *   bimonthly  bimonthly.first_billing_day and second_billing_day (default 1 and 15) of every month
 *   quarterly  quarterly.qN{billing_day, billing_month 1–3 within the quarter} (default: the start
 *              date's day and month within its quarter, every quarter)
 *   annually   annually{billing_day, billing_month} (default: the start date's)
 */
import type { Json } from '../../engine/view.ts';

const DAY_MS = 86_400_000;

function parse(date: string): Date {
  return new Date(`${date}T00:00:00Z`);
}

function format(date: Date): string {
  return date.toISOString().slice(0, 10);
}

function daysInMonth(year: number, month0: number): number {
  return new Date(Date.UTC(year, month0 + 1, 0)).getUTCDate();
}

function onDay(year: number, month0: number, day: number): string {
  return format(new Date(Date.UTC(year, month0, Math.min(day, daysInMonth(year, month0)))));
}

function num(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

/** The days of the month on which a schedule bills in a given month (0-based), per its recurrence. */
function monthDates(recurring: Json, start: Date, year: number, month0: number): string[] {
  const type = recurring.type;
  const startDay = start.getUTCDate();
  const section = (name: string) => ((recurring[name] ?? {}) as Json);
  if (type === 'monthly') return [onDay(year, month0, num(section('monthly').billing_day, startDay))];
  if (type === 'bimonthly') {
    const b = section('bimonthly');
    return [onDay(year, month0, num(b.first_billing_day, 1)), onDay(year, month0, num(b.second_billing_day, 15))];
  }
  if (type === 'annually') {
    const a = section('annually');
    return month0 + 1 === num(a.billing_month, start.getUTCMonth() + 1) ? [onDay(year, month0, num(a.billing_day, startDay))] : [];
  }
  if (type === 'quarterly') {
    const quarter = Math.floor(month0 / 3) + 1;
    const given = recurring.quarterly as Json | null | undefined;
    const q = (given ? given[`q${quarter}`] : undefined) as Json | undefined;
    const month = given ? (q ? num(q.billing_month, 1) : 0) : (start.getUTCMonth() % 3) + 1;
    const day = given ? num(q?.billing_day, startDay) : startDay;
    return month0 % 3 + 1 === month ? [onDay(year, month0, day)] : [];
  }
  return [];
}

/** Billing dates of a schedule in [from, to] (both inclusive, `YYYY-MM-DD`), anchored at its start date. */
export function billingDates(recurring: Json, startDate: string, from: string, to: string): string[] {
  if (to < from) return [];
  const start = parse(startDate);
  const type = recurring.type;
  if (type === 'daily' || type === 'weekly' || type === 'biweekly') {
    const step = type === 'daily' ? 1 : type === 'weekly' ? 7 : 14;
    const first = Math.max(0, Math.ceil((parse(from).getTime() - start.getTime()) / DAY_MS / step));
    const out: string[] = [];
    for (let n = first; ; n++) {
      const date = format(new Date(start.getTime() + n * step * DAY_MS));
      if (date > to) return out;
      out.push(date);
    }
  }
  const out = new Set<string>();
  const cursor = parse(from);
  cursor.setUTCDate(1);
  while (format(cursor) <= to) {
    for (const date of monthDates(recurring, start, cursor.getUTCFullYear(), cursor.getUTCMonth())) {
      if (date >= from && date <= to && date >= startDate) out.add(date);
    }
    cursor.setUTCMonth(cursor.getUTCMonth() + 1);
  }
  return [...out].sort();
}
