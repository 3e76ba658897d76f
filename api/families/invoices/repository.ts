/** Invoice and item SQL beyond the generic operations. */
import { rows, type Db } from '../../db/connection.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import { insertObjects } from '../../db/objects.ts';
import { tenantScan } from '../../db/tenant.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';

const ROW = STORED_ROW;

/** Locks an invoice: every change to its balance (items, allocations, racing payments) queues here. */
export async function lockInvoice(db: Db, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const found = await rows<StoredObject>(db, `select ${ROW} from invoices where id = ? and org_id = ? and environment = ? for update`, [id, tenant.orgId, tenant.environment]);
  return found[0] ?? null;
}

/** Locks several invoices in id order, so two payments naming the same invoices cannot deadlock. */
export async function lockInvoices(db: Db, tenant: Tenant, ids: string[]): Promise<Map<string, StoredObject>> {
  const locked = new Map<string, StoredObject>();
  for (const id of [...new Set(ids)].sort()) {
    const found = await lockInvoice(db, tenant, id);
    if (found) locked.set(id, found);
  }
  return locked;
}

export async function itemsOfInvoices(db: Db, tenant: Tenant, invoiceIds: string[]): Promise<StoredObject[]> {
  if (invoiceIds.length === 0) return [];
  const scope = tenantScan(tenant);
  return rows<StoredObject>(db,
    `select ${ROW} from invoice_items where ${scope.sql} and data->>'invoice_id' = any(?::text[])
      order by created_at, (data->>'line_number')::int nulls last, id`,
    [...scope.bindings, invoiceIds]);
}

/** What an invoice's number (not percentage) charges total, in minor units, less the items named. */
export async function numberChargesTotal(db: Db, tenant: Tenant, invoiceId: string, excluding: string[] = []): Promise<number> {
  const scope = tenantScan(tenant);
  const found = await rows<{ total: number }>(db,
    `select coalesce(sum((data->>'total')::bigint), 0)::bigint as total from invoice_items
      where ${scope.sql} and data->>'invoice_id' = ? and type = 'charge'
        and coalesce(data->>'value_units', 'number') <> 'percentage' and not (id = any(?::text[]))`,
    [...scope.bindings, invoiceId, excluding]);
  return Number(found[0].total);
}

export async function allocationsOfTransactions(db: Db, tenant: Tenant, transactionIds: string[]): Promise<StoredObject[]> {
  if (transactionIds.length === 0) return [];
  const scope = tenantScan(tenant);
  return rows<StoredObject>(db,
    `select ${ROW} from invoice_items where ${scope.sql} and data->>'transaction_id' = any(?::text[]) order by created_at, id`,
    [...scope.bindings, transactionIds]);
}

export async function insertItems(db: Db, tenant: Tenant, items: StoredObject[]): Promise<void> {
  await insertObjects(db, 'invoice_items', tenant, items);
}

export async function deleteItemsOfInvoices(db: Db, tenant: Tenant, invoiceIds: string[]): Promise<void> {
  const scope = tenantScan(tenant);
  await rows(db, `delete from invoice_items where ${scope.sql} and data->>'invoice_id' = any(?::text[])`, [...scope.bindings, invoiceIds]);
}

/**
 * Money already promised to invoices by earlier items of this request (a bulk create), by invoice
 * id: those allocations are written only after every item is prepared, so the locked invoice's
 * balance does not show them yet.
 */
const planned = new WeakMap<Db, Map<string, number>>();

export function plannedAllocations(db: Db): Map<string, number> {
  let map = planned.get(db);
  if (!map) planned.set(db, (map = new Map()));
  return map;
}
