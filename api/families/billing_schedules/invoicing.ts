/**
 * The invoicing run (CONTRACT §12): each schedule produces one invoice per billing date in
 * [max(start_date, the day it was created), min(end_date, today)], never back-filled before its
 * creation, holding the charges active on that date, due that day. Each schedule is handled in a
 * database transaction of its own under its row lock, remembers the last date it billed
 * (`billed_through`), and a unique index on (schedule, due date) keeps racing runs from producing
 * an invoice twice.
 */
import type { Db } from '../../db/connection.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';
import type { Json } from '../../engine/view.ts';
import { newId } from '../../ids.ts';
import { calendarDate } from '../invoices/kinds.ts';
import { insertItems, recomputeInvoices } from '../invoices/repository.ts';
import { billingDates } from './calendar.ts';
import { chargesOfSchedules, insertScheduledInvoice, lockSchedule, mergeScheduleData, schedulesToInvoice } from './repository.ts';

function activeOn(charge: StoredObject, date: string): boolean {
  const { start_date: start, end_date: end } = charge.data;
  return (typeof start !== 'string' || start <= date) && (typeof end !== 'string' || end >= date);
}

function invoiceFor(schedule: StoredObject, date: string, charges: StoredObject[], now: Date): { invoice: StoredObject; items: StoredObject[] } {
  const id = newId('inv');
  const items = charges.map((charge, i): StoredObject => ({
    id: newId('item'), type: 'charge', created_at: now, modified_at: now,
    data: {
      entry_type: 'charge', invoice_id: id, amount: charge.data.amount, qty: charge.data.qty ?? 1, value_units: 'number',
      total: charge.data.total, label: charge.data.label ?? null, description: charge.data.description ?? null, line_number: i + 1,
    },
  }));
  const total = items.reduce((sum, item) => sum + Number(item.data.total), 0);
  const data: Json = {
    payer: schedule.data.payer, biller: schedule.data.biller, due_date: date, description: schedule.data.description ?? null,
    status: 'unpaid', totals: { total, paid: 0, balance_due: total }, paid_timestamp: null,
    autopay_allowed: schedule.data.autopay_allowed ?? true, billing_schedule_id: schedule.id,
  };
  return { invoice: { id, type: 'invoice', created_at: now, modified_at: now, data }, items };
}

/** Produces one schedule's due invoices in the caller's transaction; returns the new invoice ids. */
async function invoiceSchedule(tx: Db, tenant: Tenant, scheduleId: string, today: string, now: Date): Promise<string[]> {
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
    const { invoice, items } = invoiceFor(schedule, date, active, now);
    if (!(await insertScheduledInvoice(tx, tenant, invoice))) continue;
    await insertItems(tx, tenant, items);
    produced.push(invoice.id);
  }
  await recomputeInvoices(tx, tenant, produced);
  await mergeScheduleData(tx, tenant, schedule.id, { billed_through: end });
  return produced;
}

function nextDay(date: string): string {
  return date ? new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10) : '';
}

/** The invoicing run of one tenant as of `asOf`; returns the ids of the invoices it produced. */
export async function produceInvoices(db: Db, tenant: Tenant, asOf: Date): Promise<string[]> {
  const today = calendarDate(asOf);
  const produced: string[] = [];
  for (const schedule of await schedulesToInvoice(db, tenant, today)) {
    produced.push(...(await db.transaction((tx) => invoiceSchedule(tx, tenant, schedule.id, today, asOf))));
  }
  return produced;
}
