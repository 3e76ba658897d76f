/**
 * An invoice's totals and status follow its items: every change of an item (a charge added,
 * changed or deleted, a payment allocated, an allocation released) recomputes its invoice in the
 * same database transaction, the invoice locked first, so changes of one invoice's items queue on
 * it and each recompute reads the items as the others left them. The recompute is a change
 * through the families' update: each percentage charge whose share of the number charges moved
 * gets its new total, and the invoice its totals (`RECOMPUTED`: the invoice family's rule for it
 * decides the status and when it was paid), each written with its audit event by the door's
 * statement.
 */
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { updateNested } from '../../engine/operations.ts';
import { invoiceFamily } from './declared.ts';
import { percentageTotal } from './chargeTotals.ts';
import { itemsOfInvoices, lockInvoice } from './repository.ts';

/**
 * The stored value a recompute sets on an invoice through its update: the time of the recompute
 * (when an invoice it finds paid was paid). No client input reaches it; the family's prepare
 * reads it and removes it.
 */
export const RECOMPUTED = 'recomputed_at';

/** The invoices a transaction is recomputing, so that a change the recompute makes does not start another. */
const underway = new WeakMap<RuleContext['tx'], Set<string>>();

/** Recomputes the invoices (in id order), leaving out the items of `excluding` (ones about to be deleted). */
export async function recomputeInvoices(ctx: RuleContext, invoiceIds: string[], excluding: string[] = []): Promise<void> {
  // The guard is kept per transaction: on the pool, concurrent requests would share one set.
  if (!ctx.tx.inTransaction) throw new Error('An invoice is recomputed inside the transaction of the change that moves it');
  let running = underway.get(ctx.tx);
  if (!running) underway.set(ctx.tx, (running = new Set()));
  for (const id of [...new Set(invoiceIds)].sort()) {
    if (running.has(id)) continue;
    running.add(id);
    try {
      await recompute(ctx, id, new Set(excluding));
    } finally {
      running.delete(id);
    }
  }
}

function isPercentageCharge(item: StoredObject): boolean {
  return item.type === 'charge' && item.data.value_units === 'percentage';
}

async function recompute(ctx: RuleContext, invoiceId: string, excluding: Set<string>): Promise<void> {
  const invoice = await lockInvoice(ctx.tx, ctx.tenant, invoiceId);
  if (!invoice) return;
  const items = (await itemsOfInvoices(ctx.tx, ctx.tenant, [invoiceId])).filter((item) => !excluding.has(item.id));
  const numberTotal = items.filter((item) => item.type === 'charge' && !isPercentageCharge(item)).reduce((sum, item) => sum + Number(item.data.total ?? 0), 0);
  let charged = 0;
  let paid = 0;
  for (const item of items) {
    if (item.type === 'payment') paid += Number(item.data.amount ?? 0);
    if (item.type !== 'charge') continue;
    let total = Number(item.data.total ?? 0);
    if (isPercentageCharge(item)) {
      const share = percentageTotal(numberTotal, Number(item.data.amount), Number(item.data.qty ?? 1));
      if (share !== total) await updateNested(ctx, invoiceFamily('charge'), item, {}, new Map([['total', share]]));
      total = share;
    }
    charged += total;
  }
  await updateNested(ctx, invoiceFamily('invoice'), invoice, {}, new Map<string, unknown>([
    [RECOMPUTED, ctx.domain.now().toISOString()],
    ['totals', { total: charged, paid }],
  ]));
}
