/**
 * The invoicing run (CONTRACT §12): each schedule produces one invoice per billing date in
 * [max(start_date, the day it was created), min(end_date, today)], never back-filled before its
 * creation, holding the charges active on that date, due that day. Each schedule is handled in a
 * database transaction of its own under its row lock, remembers the last date it billed
 * (`billed_through`), and a unique index on (schedule, due date) refuses a second invoice for a
 * date. Invoices are made by the invoice family's create service, and the schedule's mark is changed
 * by the schedule family's update; the schedule family emits no event for it.
 */
import type { Db } from '../../db/connection.ts';
import type { DomainServices, RuleContext, StoredObject, Tenant } from '../../engine/family.ts';
import { createNested, updateNested } from '../../engine/operations.ts';
import type { Json } from '../../engine/view.ts';
import { ApiError } from '../../errors.ts';
import { formatMoney } from '../../schema/values.ts';
import { invoices } from '../invoices/family.ts';
import { calendarDate } from '../invoices/kinds.ts';
import { billingDates } from './calendar.ts';
import { billingSchedules } from './family.ts';
import { chargesOfSchedules, lockSchedule, schedulesToInvoice } from './repository.ts';

function activeOn(charge: StoredObject, date: string): boolean {
  const { start_date: start, end_date: end } = charge.data;
  return (typeof start !== 'string' || start <= date) && (typeof end !== 'string' || end >= date);
}

/**
 * The invoice of one billing date as a client would send it (v1, money in API units), created
 * through the invoice family's own service: its rules check the payer, its method and the
 * biller, price the items and store them with it.
 */
function invoiceBody(schedule: StoredObject, date: string, charges: StoredObject[]): Json {
  const party = (name: string) => (schedule.data[name] ?? {}) as Json;
  return {
    customer_id: party('payer').account_id, payment_method_id: party('payer').method_id ?? undefined, processing_id: party('biller').account_id,
    due_date: date, description: schedule.data.description ?? undefined, autopay_allowed: schedule.data.autopay_allowed ?? true,
    items: charges.map((charge) => ({
      type: charge.data.label ?? undefined, description: charge.data.description ?? undefined,
      amount: formatMoney(Number(charge.data.amount)), qty: charge.data.qty ?? 1,
    })),
  };
}

function runContext(tx: Db, domain: DomainServices, tenant: Tenant): RuleContext {
  return { tx, tenant, version: 'v1', domain, principal: { kind: 'secret', keyId: 'billing_run', settings: {} } };
}

/** Produces one schedule's due invoices in the caller's transaction; returns the new invoice ids. */
async function invoiceSchedule(ctx: RuleContext, scheduleId: string, today: string): Promise<string[]> {
  const { tx, tenant } = ctx;
  const schedule = await lockSchedule(tx, tenant, scheduleId);
  if (!schedule) return [];
  const created = calendarDate(new Date(schedule.created_at));
  const start = String(schedule.data.start_date);
  const billedThrough = typeof schedule.data.billed_through === 'string' ? schedule.data.billed_through : '';
  const end = typeof schedule.data.end_date === 'string' && schedule.data.end_date < today ? schedule.data.end_date : today;
  const from = [start, created, nextDay(billedThrough)].sort().at(-1)!;
  const charges = await chargesOfSchedules(tx, tenant, [schedule.id]);
  const produced: string[] = [];
  for (const date of billingDates((schedule.data.recurring ?? {}) as Json, start, from, end)) {
    const active = charges.filter((charge) => activeOn(charge, date));
    if (active.length === 0) continue;
    const invoice = await createNested(ctx, invoices, invoiceBody(schedule, date, active), new Map([['billing_schedule_id', schedule.id]]));
    produced.push(invoice.id);
  }
  // `billed_through` is the run's own mark, no client field: set through the family's update, whose
  // rules refuse a schedule no client could change either (its method no longer its payer's).
  await updateNested(ctx, billingSchedules, schedule, {}, new Map([['billed_through', end]]));
  return produced;
}

function nextDay(date: string): string {
  return date ? new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10) : '';
}

/** The invoicing run of one tenant as of `asOf`; returns the ids of the invoices it produced. */
export async function produceInvoices(db: Db, domain: DomainServices, tenant: Tenant, asOf: Date): Promise<string[]> {
  const today = calendarDate(asOf);
  const produced: string[] = [];
  for (const schedule of await schedulesToInvoice(db, tenant, today)) {
    try {
      produced.push(...(await db.transaction((tx) => invoiceSchedule(runContext(tx, domain, tenant), schedule.id, today))));
    } catch (error) {
      // An invoice the family's rules refuse (its payer or method gone) is not made, and the
      // schedule is not billed through that date: the next run tries it again; others go on.
      if (!(error instanceof ApiError && error.status === 400)) throw error;
    }
  }
  return produced;
}
