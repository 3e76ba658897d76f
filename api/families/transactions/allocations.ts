/**
 * Paying invoices with a payment (CONTRACT §12): v1 `allocations: [{entry_type: payment,
 * invoice_id[, amount]}]`, v2 `invoice_allocations: [{invoice_id[, amount]}]`.
 *
 * Before the payment is decided, each named invoice is locked (in id order) and checked: it
 * accepts payments, the allocation fits its balance (counting what earlier items of the same
 * request promised), and the payment's missing parties come from it (payer → customer / sender,
 * biller → processing account / receiver). Once the payment row exists, its allocations are
 * written and the invoices recomputed in the same database transaction, so a GET right after the
 * create shows the new status, and two payments racing for the last balance queue on the invoice
 * lock: the second sees the first's allocation and is refused. A payment that later stops
 * standing (by a client's change or the worker's) releases its allocations in that change.
 * A payment through a payment link is completed from the link first (../payment_links/payments.ts).
 */
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { isPlainObject, render, type Json } from '../../engine/view.ts';
import { parseMoney } from '../../schema/values.ts';
import { invalidAttributes } from '../../errors.ts';
import { itemView } from '../invoices/items.ts';
import { OPEN_TO_PAYMENTS } from '../invoices/itemRules.ts';
import { fillPaymentParty } from '../invoices/paymentParties.ts';
import { recordPaymentAllocations, releasePaymentAllocations } from '../invoices/paidBy.ts';
import { allocationsOfTransactions, lockInvoices, plannedAllocations } from '../invoices/repository.ts';
import { completePaymentLink } from '../payment_links/payments.ts';

interface Allocation {
  invoice_id: string;
  amount?: number;
}

function listField(ctx: RuleContext): string {
  return ctx.version === 'v1' ? 'allocations' : 'invoice_allocations';
}

function parseAllocations(ctx: RuleContext, list: Json[]): Allocation[] {
  const field = listField(ctx);
  const seen = new Set<string>();
  return list.map((item, i) => {
    const fail = (reason: Json) => invalidAttributes({ [field]: { [i]: reason } });
    if (ctx.version === 'v1' && item.entry_type !== undefined && item.entry_type !== 'payment') throw fail({ entry_type: 'Must be payment' });
    if (typeof item.invoice_id !== 'string') throw fail({ invoice_id: 'Required' });
    if (seen.has(item.invoice_id)) throw fail({ invoice_id: 'Named more than once' });
    seen.add(item.invoice_id);
    if (item.amount === undefined || item.amount === null) return { invoice_id: item.invoice_id };
    const amount = parseMoney(item.amount);
    if (!amount.ok) throw fail({ amount: amount.reason });
    return { invoice_id: item.invoice_id, amount: amount.value as number };
  });
}

function sideOf(invoice: StoredObject, side: 'payer' | 'biller'): string | undefined {
  const party = invoice.data[side];
  return isPlainObject(party) && typeof party.account_id === 'string' ? party.account_id : undefined;
}

/** One allocation against its locked invoice: open to payments, same parties as the first, within the balance. */
function checkAllocation(ctx: RuleContext, data: Json, allocations: Allocation[], i: number, invoices: Map<string, StoredObject>): Allocation {
  const fail = (reason: Json) => invalidAttributes({ [listField(ctx)]: { [i]: reason } });
  const invoice = invoices.get(allocations[i].invoice_id);
  if (!invoice) throw fail({ invoice_id: 'No invoice with this id' });
  const status = String(invoice.data.status);
  if (!OPEN_TO_PAYMENTS.has(status)) throw fail({ invoice_id: `A ${status} invoice accepts no payment` });
  const first = invoices.get(allocations[0].invoice_id)!;
  if (sideOf(invoice, 'payer') !== sideOf(first, 'payer') || sideOf(invoice, 'biller') !== sideOf(first, 'biller')) {
    throw fail({ invoice_id: 'One payment pays invoices of one payer and one biller' });
  }
  const available = Number((invoice.data.totals as Json | undefined)?.balance_due ?? 0) - (plannedAllocations(ctx.tx).get(invoice.id) ?? 0);
  const amount = allocations[i].amount ?? (allocations.length === 1 && typeof data.amount === 'number' ? data.amount : available);
  if (amount <= 0 || amount > available) throw fail({ amount: `Exceeds the invoice's balance due of ${(Math.max(available, 0) / 100).toFixed(2)}` });
  return { invoice_id: invoice.id, amount };
}

/**
 * Runs before the payment's parties are resolved: checks the allocations against the locked
 * invoices, completes the payment from them and keeps the plan in `allocation_plan`.
 */
export async function planAllocations(ctx: RuleContext, type: string, data: Json): Promise<void> {
  const list = data.allocations as Json[] | undefined;
  delete data.allocations;
  if (!list || list.length === 0) return;
  if (type !== 'payment') throw invalidAttributes({ [listField(ctx)]: 'Only a payment pays invoices' });
  const allocations = parseAllocations(ctx, list);
  const invoices = await lockInvoices(ctx.tx, ctx.tenant, allocations.map((a) => a.invoice_id));
  const plan = allocations.map((_, i) => checkAllocation(ctx, data, allocations, i, invoices));
  const total = plan.reduce((sum, a) => sum + a.amount!, 0);
  if (data.amount === undefined || data.amount === null) data.amount = total;
  else if (total > Number(data.amount)) throw invalidAttributes({ amount: `Less than the ${(total / 100).toFixed(2)} allocated to invoices` });
  const first = invoices.get(plan[0].invoice_id)!;
  fillPaymentParty(ctx, data, 'payer', sideOf(first, 'payer'), 'invoice');
  fillPaymentParty(ctx, data, 'biller', sideOf(first, 'biller'), 'invoice');
  const promised = plannedAllocations(ctx.tx);
  for (const a of plan) promised.set(a.invoice_id, (promised.get(a.invoice_id) ?? 0) + a.amount!);
  data.allocation_plan = plan;
}

/** Statuses of a payment that no longer pays anything. */
const NOT_STANDING = ['declined', 'voided', 'rejected'];

/** Runs once the payment row exists: a payment that stands writes its allocations and recomputes the invoices. */
export async function applyAllocations(ctx: RuleContext, payment: StoredObject): Promise<void> {
  await completePaymentLink(ctx, payment);
  const plan = (Array.isArray(payment.data.allocation_plan) ? payment.data.allocation_plan : []) as Allocation[];
  if (plan.length === 0) return;
  const promised = plannedAllocations(ctx.tx);
  for (const a of plan) promised.set(a.invoice_id, (promised.get(a.invoice_id) ?? 0) - a.amount!);
  if (NOT_STANDING.includes(String(payment.data.status))) return;
  await recordPaymentAllocations(ctx, payment, plan.map((a) => ({ invoice_id: a.invoice_id, amount: a.amount! })));
}

/** Runs on every change of a payment: one that stops standing releases the allocations it made. */
export async function releaseAllocations(ctx: RuleContext, next: StoredObject, previous: StoredObject): Promise<void> {
  const planned = Array.isArray(next.data.allocation_plan) && next.data.allocation_plan.length > 0;
  if (!planned || previous.data.status === next.data.status || !NOT_STANDING.includes(String(next.data.status))) return;
  await releasePaymentAllocations(ctx, next);
}

/** v1 `allocations` / v2 `invoice_allocations` (non-default fields): the payment's standing allocations. */
export async function loadAllocations(ctx: RuleContext, rows: StoredObject[], include: Set<string>): Promise<void> {
  if (!include.has(listField(ctx)) || rows.length === 0) return;
  const items = await allocationsOfTransactions(ctx.tx, ctx.tenant, rows.map((r) => r.id));
  for (const row of rows) {
    row.data = { ...row.data, allocations: items.filter((item) => item.data.transaction_id === row.id).map((item) => render(itemView, ctx.version, item)) };
  }
}
