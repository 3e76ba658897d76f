/** Billing schedule SQL beyond the generic operations. */
import { rows, type Db } from '../../db/connection.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import { insertObjects } from '../../db/objects.ts';
import { tenantScan } from '../../db/tenant.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';

const ROW = STORED_ROW;

export async function lockSchedule(db: Db, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const found = await rows<StoredObject>(db, `select ${ROW} from billing_schedules where id = ? and org_id = ? and environment = ? for update`, [id, tenant.orgId, tenant.environment]);
  return found[0] ?? null;
}

export async function chargesOfSchedules(db: Db, tenant: Tenant, scheduleIds: string[]): Promise<StoredObject[]> {
  if (scheduleIds.length === 0) return [];
  const scope = tenantScan(tenant);
  return rows<StoredObject>(db,
    `select ${ROW} from billing_charges where ${scope.sql} and data->>'billing_schedule_id' = any(?::text[])
      order by created_at, (data->>'position')::int nulls last, id`,
    [...scope.bindings, scheduleIds]);
}

export async function insertCharges(db: Db, tenant: Tenant, charges: StoredObject[]): Promise<void> {
  await insertObjects(db, 'billing_charges', tenant, charges);
}

export async function deleteChargesOfSchedules(db: Db, tenant: Tenant, scheduleIds: string[]): Promise<void> {
  const scope = tenantScan(tenant);
  await rows(db, `delete from billing_charges where ${scope.sql} and data->>'billing_schedule_id' = any(?::text[])`, [...scope.bindings, scheduleIds]);
}

/** What the schedule's charges total (less those being deleted), in minor units: its `recurring_amount`. */
export async function recurringAmountOf(db: Db, tenant: Tenant, scheduleId: string, excluding: string[] = []): Promise<number> {
  const scope = tenantScan(tenant);
  const [found] = await rows<{ total: string }>(db,
    `select coalesce(sum((data->>'total')::bigint), 0)::bigint as total from billing_charges
      where ${scope.sql} and data->>'billing_schedule_id' = ? and not (id = any(?::text[]))`,
    [...scope.bindings, scheduleId, excluding]);
  return Number(found.total);
}

export interface ScheduleInvoiceTotals {
  billing_schedule_id: string;
  total: number;
  paid: number;
  balance_due: number;
}

/** What the invoices of each schedule total, have received and still owe (closed invoices owe nothing). */
export async function invoiceTotalsOfSchedules(db: Db, tenant: Tenant, scheduleIds: string[]): Promise<ScheduleInvoiceTotals[]> {
  if (scheduleIds.length === 0) return [];
  const scope = tenantScan(tenant);
  // Sums of bigint come back as text: numbers here, as the type says (cents stay exact far past any total).
  const found = await rows<Record<keyof ScheduleInvoiceTotals, string>>(db,
    `select data->>'billing_schedule_id' as billing_schedule_id,
            coalesce(sum((data->'totals'->>'total')::bigint), 0)::bigint as total,
            coalesce(sum((data->'totals'->>'paid')::bigint), 0)::bigint as paid,
            coalesce(sum((data->'totals'->>'balance_due')::bigint) filter (where data->>'status' not in ('closed', 'draft')), 0)::bigint as balance_due
       from invoices where ${scope.sql} and data->>'billing_schedule_id' = any(?::text[])
      group by 1`,
    [...scope.bindings, scheduleIds]);
  return found.map((r) => ({ billing_schedule_id: r.billing_schedule_id, total: Number(r.total), paid: Number(r.paid), balance_due: Number(r.balance_due) }));
}

export async function invoicesOfSchedules(db: Db, tenant: Tenant, scheduleIds: string[]): Promise<StoredObject[]> {
  if (scheduleIds.length === 0) return [];
  const scope = tenantScan(tenant);
  return rows<StoredObject>(db,
    `select ${ROW} from invoices where ${scope.sql} and data->>'billing_schedule_id' = any(?::text[]) order by data->>'due_date', id`,
    [...scope.bindings, scheduleIds]);
}

/** Schedules of a tenant with billing dates up to `today` not yet invoiced. */
export async function schedulesToInvoice(db: Db, tenant: Tenant, today: string): Promise<StoredObject[]> {
  const scope = tenantScan(tenant);
  return rows<StoredObject>(db,
    `select ${ROW} from billing_schedules
      where ${scope.sql} and data->>'start_date' <= ?
        and coalesce(data->>'billed_through', '') < least(coalesce(data->>'end_date', ?), ?)
      order by created_at, id`,
    [...scope.bindings, today, today, today]);
}

/** Invoices of a tenant due within [from, to] that may be charged automatically and were not tried on `today`. */
export async function invoicesForAutopay(db: Db, tenant: Tenant, from: string, to: string, today: string): Promise<StoredObject[]> {
  const scope = tenantScan(tenant);
  return rows<StoredObject>(db,
    `select ${ROW} from invoices
      where ${scope.sql} and data->>'status' in ('unpaid', 'partially_paid')
        and data->>'due_date' between ? and ? and coalesce((data->>'autopay_allowed')::boolean, true)
        and coalesce(data->>'last_autopay_on', '') < ?
      order by data->>'due_date', id`,
    [...scope.bindings, from, to, today]);
}

/** Every tenant that could hold billing work: each org's test and live environments. */
export async function billingTenants(db: Db): Promise<Tenant[]> {
  const orgs = await rows<{ id: string }>(db, 'select id from orgs order by id');
  return orgs.flatMap((org) => (['test', 'live'] as const).map((environment) => ({ orgId: org.id, environment })));
}
