/**
 * Charge rules: each charge belongs to a schedule (locked while its charges change), carries its
 * own total (`amount × qty`), and keeps the schedule's `recurring_amount` in step.
 */
import type { FamilyRules, RuleContext, StoredObject } from '../../engine/family.ts';
import type { Json } from '../../engine/view.ts';
import { invalidAttributes } from '../../errors.ts';
import { chargeTotal } from '../invoices/chargeTotals.ts';
import { updateNested } from '../../engine/operations.ts';
import { lockSchedule, recurringAmountOf } from './repository.ts';
import { scheduleFamily } from './scheduleFamily.ts';
import { normaliseDateRange } from './dateRange.ts';

/** A charge's defaults, dates and total; its amount is required. */
export function completeScheduleCharge(ctx: RuleContext, data: Json): Json {
  if (typeof data.amount !== 'number') throw invalidAttributes(ctx.version === 'v1' ? { amount: 'Required' } : { line_item: { value: 'Required' } });
  const out: Json = { ...data, qty: data.qty ?? 1, value_units: data.value_units ?? 'number' };
  normaliseDateRange(out, false);
  out.total = chargeTotal(Number(out.amount), Number(out.qty));
  return out;
}

async function scheduleOf(ctx: RuleContext, data: Json): Promise<StoredObject> {
  const schedule = await lockSchedule(ctx.tx, ctx.tenant, String(data.billing_schedule_id));
  if (!schedule) throw invalidAttributes({ billing_schedule_id: 'No billing schedule with this id' });
  return schedule;
}

async function prepare(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<StoredObject> {
  if (previous && next.data.billing_schedule_id !== previous.data.billing_schedule_id) {
    throw invalidAttributes({ billing_schedule_id: 'Cannot be changed; delete the charge and add another' });
  }
  await scheduleOf(ctx, next.data);
  return { ...next, data: completeScheduleCharge(ctx, next.data) };
}

/** The schedule's `recurring_amount` follows its charges (less those being deleted), through the schedule's update. */
async function followRecurringAmount(ctx: RuleContext, scheduleId: string, excluding: string[] = []): Promise<void> {
  const schedule = await scheduleOf(ctx, { billing_schedule_id: scheduleId });
  const amount = await recurringAmountOf(ctx.tx, ctx.tenant, scheduleId, excluding);
  await updateNested(ctx, scheduleFamily(), schedule, {}, new Map([['recurring_amount', amount]]));
}

async function afterWrite(ctx: RuleContext, next: StoredObject): Promise<void> {
  await followRecurringAmount(ctx, String(next.data.billing_schedule_id));
}

async function beforeDelete(ctx: RuleContext, rows: StoredObject[]): Promise<void> {
  for (const scheduleId of new Set(rows.map((r) => String(r.data.billing_schedule_id)))) {
    await followRecurringAmount(ctx, scheduleId, rows.map((r) => r.id));
  }
}

export const chargeRules: FamilyRules = { prepare, afterWrite, beforeDelete };
