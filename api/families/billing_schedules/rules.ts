/**
 * Billing schedule rules: payer and biller (inferred like an invoice's), the date range, the
 * recurrence details, charges created with the schedule, and what is shown nested: its charges,
 * the amounts its invoices total, and (when asked for) the invoices themselves.
 */
import type { FamilyRules, RuleContext, StoredObject } from '../../engine/family.ts';
import { applyValues, decodeInput, isPlainObject, render, type Json } from '../../engine/view.ts';
import { ApiError, invalidAttributes } from '../../errors.ts';
import { newId } from '../../ids.ts';
import { invoices } from '../invoices/family.ts';
import { checkPayerMethod, findPayer, resolveBiller } from '../invoices/parties.ts';
import { billingCharges } from './charges.ts';
import { completeScheduleCharge } from './chargeRules.ts';
import { normaliseDateRange } from './dateRange.ts';
import { chargesOfSchedules, deleteChargesOfSchedules, insertCharges, invoicesOfSchedules, invoiceTotalsOfSchedules } from './repository.ts';

function accountOf(data: Json, side: 'payer' | 'biller'): string | undefined {
  const party = data[side];
  return isPlainObject(party) && typeof party.account_id === 'string' ? party.account_id : undefined;
}

/** `quarterly: {q1: {billing_day, billing_month}, …}`, the month counted within its quarter (1–3). */
function checkQuarterly(ctx: RuleContext, recurring: Json): void {
  const quarterly = recurring.quarterly;
  if (quarterly === undefined || quarterly === null) return;
  const path = ctx.version === 'v1' ? 'quarterly' : 'recurring_schedule[quarterly]';
  for (const [key, value] of Object.entries(quarterly as Json)) {
    const ok = /^q[1-4]$/.test(key) && isPlainObject(value)
      && Number.isInteger(Number(value.billing_day)) && Number(value.billing_day) >= 1 && Number(value.billing_day) <= 31
      && (value.billing_month === undefined || [1, 2, 3].includes(Number(value.billing_month)));
    if (!ok) throw invalidAttributes({ [path]: { [key]: 'Must be {billing_day: 1-31, billing_month: 1-3} under q1…q4' } });
  }
}

function decodeNestedCharge(ctx: RuleContext, scheduleId: string, input: Json, index: number): StoredObject {
  const body: Json = { ...input, billing_schedule_id: scheduleId };
  delete body.object;
  delete body.id;
  const listName = ctx.version === 'v1' ? 'charges' : 'items';
  try {
    const { values } = decodeInput(billingCharges, ctx.version, 'charge', body, 'create');
    const now = ctx.domain.now();
    const row = applyValues({ id: newId('bcrg'), type: 'charge', created_at: now, modified_at: now, data: {} }, values);
    // Charges created together keep the order they were sent in.
    return { ...row, data: { ...completeScheduleCharge(ctx, row.data), position: index } };
  } catch (error) {
    if (error instanceof ApiError && error.status === 400) throw invalidAttributes({ [listName]: { [index]: error.details ?? error.message } });
    throw error;
  }
}

const pendingCharges = new WeakMap<RuleContext['tx'], Map<string, StoredObject[]>>();

async function prepareCreate(ctx: RuleContext, row: StoredObject): Promise<StoredObject> {
  const data: Json = { ...row.data };
  normaliseDateRange(data, true);
  checkQuarterly(ctx, (data.recurring ?? {}) as Json);
  const payer = await findPayer(ctx, accountOf(data, 'payer'));
  await checkPayerMethod(ctx, data);
  data.biller = { account_id: await resolveBiller(ctx, accountOf(data, 'biller'), payer) };
  const charges = ((data.charges ?? []) as Json[]).map((charge, i) => decodeNestedCharge(ctx, row.id, charge, i));
  delete data.charges;
  let held = pendingCharges.get(ctx.tx);
  if (!held) pendingCharges.set(ctx.tx, (held = new Map()));
  held.set(row.id, charges);
  data.recurring_amount = charges.reduce((sum, c) => sum + Number(c.data.total), 0);
  return { ...row, data };
}

async function prepareUpdate(ctx: RuleContext, next: StoredObject, previous: StoredObject): Promise<StoredObject> {
  const data: Json = { ...next.data };
  if (data.charges !== undefined) {
    throw invalidAttributes({ [ctx.version === 'v1' ? 'charges' : 'items']: `Add charges with POST ${ctx.version === 'v1' ? '/billing_charges' : '/billing_items'} {billing_schedule_id, …}` });
  }
  if (accountOf(data, 'payer') !== accountOf(previous.data, 'payer')) {
    throw invalidAttributes({ [ctx.version === 'v1' ? 'customer_id' : 'payer[account_id]']: 'The payer of a schedule cannot change' });
  }
  if (accountOf(data, 'biller') !== accountOf(previous.data, 'biller')) data.biller = { account_id: await resolveBiller(ctx, accountOf(data, 'biller'), null) };
  await checkPayerMethod(ctx, data);
  normaliseDateRange(data, true);
  checkQuarterly(ctx, (data.recurring ?? {}) as Json);
  return { ...next, data };
}

async function afterWrite(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<void> {
  if (previous) return;
  const held = pendingCharges.get(ctx.tx);
  await insertCharges(ctx.tx, ctx.tenant, held?.get(next.id) ?? []);
  held?.delete(next.id);
}

async function beforeDelete(ctx: RuleContext, rows: StoredObject[]): Promise<void> {
  await deleteChargesOfSchedules(ctx.tx, ctx.tenant, rows.map((r) => r.id));
}

async function load(ctx: RuleContext, rows: StoredObject[], include: Set<string>): Promise<void> {
  if (rows.length === 0) return;
  const ids = rows.map((r) => r.id);
  const [charges, totals, produced] = await Promise.all([
    chargesOfSchedules(ctx.tx, ctx.tenant, ids),
    invoiceTotalsOfSchedules(ctx.tx, ctx.tenant, ids),
    include.has('invoices') ? invoicesOfSchedules(ctx.tx, ctx.tenant, ids) : Promise.resolve([]),
  ]);
  for (const row of rows) {
    const sums = totals.find((s) => s.billing_schedule_id === row.id);
    row.data = {
      ...row.data,
      charges: charges.filter((c) => c.data.billing_schedule_id === row.id).map((c) => render(billingCharges, ctx.version, c)),
      totals: { total: sums?.total ?? 0, paid: sums?.paid ?? 0, balance_due: sums?.balance_due ?? 0 },
      invoices: produced.filter((i) => i.data.billing_schedule_id === row.id).map((i) => render(invoices, ctx.version, i)),
    };
  }
}

export const scheduleRules: FamilyRules = {
  prepare: (ctx, next, previous) => (previous ? prepareUpdate(ctx, next, previous) : prepareCreate(ctx, next)),
  afterWrite,
  beforeDelete,
  load,
};
