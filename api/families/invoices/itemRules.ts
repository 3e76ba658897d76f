/**
 * Item rules: a charge changes what an invoice totals, an external payment allocation what it has
 * received. Each locks its invoice, checks the invoice accepts the change, and recomputes the
 * invoice's totals and status in the same database transaction (./recompute.ts). A payment's allocations come
 * through the same create (./paidBy.ts), after the payment planned them against the locked invoice.
 */
import type { FamilyRules, RuleContext, StoredObject } from '../../engine/family.ts';
import type { Json } from '../../engine/view.ts';
import { invalidAttributes } from '../../errors.ts';
import { chargeTotal, percentageTotal } from './chargeTotals.ts';
import { recomputeInvoices } from './recompute.ts';
import { lockInvoice, numberChargesTotal, plannedAllocations } from './repository.ts';

export const CLOSED_TO_CHARGES = new Set(['paid', 'closed']);
export const OPEN_TO_PAYMENTS = new Set(['unpaid', 'partially_paid']);

export function isPercentage(data: Json): boolean {
  return data.value_units === 'percentage';
}

/** A charge's defaults and its total (`amount` is already minor units); `numberTotal` prices a percentage charge. */
export function completeCharge(data: Json, numberTotal = 0): Json {
  const out: Json = { ...data, entry_type: 'charge', qty: data.qty ?? 1, value_units: data.value_units ?? 'number' };
  out.total = isPercentage(out) ? percentageTotal(numberTotal, Number(out.amount), Number(out.qty)) : chargeTotal(Number(out.amount), Number(out.qty));
  delete out.external_payment;
  return out;
}

/** Decides the stored kind: `/line_items` takes it from `entry_type` (charge by default). */
function withKind(ctx: RuleContext, next: StoredObject): StoredObject {
  const requested = next.data.entry_type;
  const kind = next.type === 'item' ? String(requested ?? 'charge') : next.type;
  if (requested !== undefined && requested !== null && requested !== kind) throw invalidAttributes({ entry_type: `Must be ${kind} here` });
  return { ...next, type: kind, data: { ...next.data, entry_type: kind } };
}

function amountPath(ctx: RuleContext, kind: string): string {
  return ctx.version === 'v2' && kind === 'charge' ? 'line_item[value]' : 'amount';
}

async function invoiceOf(ctx: RuleContext, data: Json): Promise<StoredObject> {
  const invoice = await lockInvoice(ctx.tx, ctx.tenant, String(data.invoice_id));
  if (!invoice) throw invalidAttributes({ invoice_id: 'No invoice with this id' });
  return invoice;
}

function balanceDue(invoice: StoredObject): number {
  return Number((invoice.data.totals as Json | undefined)?.balance_due ?? 0);
}

async function prepareCreate(ctx: RuleContext, row: StoredObject): Promise<StoredObject> {
  const next = withKind(ctx, row);
  const data = { ...next.data };
  if (typeof data.amount !== 'number') throw invalidAttributes({ [amountPath(ctx, next.type)]: 'Required' });
  const invoice = await invoiceOf(ctx, data);
  const status = String(invoice.data.status);
  if (next.type === 'charge') {
    if (CLOSED_TO_CHARGES.has(status)) throw invalidAttributes({ invoice_id: `A ${status} invoice takes no new items` });
    return { ...next, data: completeCharge(data, isPercentage(data) ? await numberChargesTotal(ctx.tx, ctx.tenant, invoice.id) : 0) };
  }
  // A payment's own allocation names it (transaction_id, which only the payment sets: ./paidBy.ts).
  if (data.external_payment !== true && typeof data.transaction_id !== 'string') {
    throw invalidAttributes({ external_payment: 'Only money paid elsewhere is recorded here (external_payment: true); payments allocate with POST /transactions' });
  }
  if (!OPEN_TO_PAYMENTS.has(status)) throw invalidAttributes({ invoice_id: `A ${status} invoice accepts no payment` });
  const promised = plannedAllocations(ctx.tx);
  const available = balanceDue(invoice) - (promised.get(invoice.id) ?? 0);
  if (data.amount > available) throw invalidAttributes({ amount: `Exceeds the invoice's balance due of ${(Math.max(available, 0) / 100).toFixed(2)}` });
  promised.set(invoice.id, (promised.get(invoice.id) ?? 0) + data.amount);
  for (const key of ['qty', 'value_units', 'total', 'item_type', 'label']) delete data[key];
  return { ...next, data };
}

const FIXED = ['entry_type', 'invoice_id', 'transaction_id', 'external_payment'];

async function prepareUpdate(ctx: RuleContext, next: StoredObject, previous: StoredObject): Promise<StoredObject> {
  for (const key of FIXED) {
    if (JSON.stringify(next.data[key]) !== JSON.stringify(previous.data[key])) throw invalidAttributes({ [key]: 'Cannot be changed; delete the item and add another' });
  }
  const moneyChanged = ['amount', 'qty', 'value_units'].some((key) => next.data[key] !== previous.data[key]);
  if (!moneyChanged) return next;
  if (next.type === 'payment') throw invalidAttributes({ amount: 'An allocation cannot be changed; delete it and add another' });
  const invoice = await invoiceOf(ctx, next.data);
  if (CLOSED_TO_CHARGES.has(String(invoice.data.status))) throw invalidAttributes({ invoice_id: `The items of a ${String(invoice.data.status)} invoice cannot change` });
  const numberTotal = isPercentage(next.data) ? await numberChargesTotal(ctx.tx, ctx.tenant, invoice.id, [next.id]) : 0;
  return { ...next, data: completeCharge(next.data, numberTotal) };
}

async function afterWrite(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<void> {
  if (!previous && next.type === 'payment') {
    const promised = plannedAllocations(ctx.tx);
    promised.set(String(next.data.invoice_id), (promised.get(String(next.data.invoice_id)) ?? 0) - Number(next.data.amount));
  }
  await recomputeInvoices(ctx, [String(next.data.invoice_id)]);
}

async function beforeDelete(ctx: RuleContext, rows: StoredObject[]): Promise<void> {
  for (const row of rows) {
    // A payment's allocation goes when the payment stops standing, in that payment's change.
    if (row.type === 'payment' && row.data.transaction_id && !ctx.changing?.has(String(row.data.transaction_id))) {
      throw invalidAttributes({ id: `${row.id} belongs to payment ${String(row.data.transaction_id)}; void the payment to release it` });
    }
    const invoice = await invoiceOf(ctx, row.data);
    if (row.type === 'charge' && CLOSED_TO_CHARGES.has(String(invoice.data.status))) {
      throw invalidAttributes({ id: `The items of a ${String(invoice.data.status)} invoice cannot change` });
    }
  }
  await recomputeInvoices(ctx, rows.map((r) => String(r.data.invoice_id)), rows.map((r) => r.id));
}

export const itemRules: FamilyRules = {
  prepare: (ctx, next, previous) => (previous ? prepareUpdate(ctx, next, previous) : prepareCreate(ctx, next)),
  afterWrite,
  beforeDelete,
};
