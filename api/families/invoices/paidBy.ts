/**
 * The items a payment leaves on the invoices it pays (CONTRACT §12): one payment allocation per
 * invoice, made by the item family's own create as stored values (`transaction_id` is read-only
 * to clients, so only a payment names one), so its rules check the invoice and recompute it and
 * its audit is any item's. A declined automatic payment leaves a zero allocation, the record of
 * the day's attempt.
 */
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { createFromValues, deleteNested } from '../../engine/operations.ts';
import { paymentAllocations } from './items.ts';
import { allocationsOfTransactions } from './repository.ts';

export interface PaidShare {
  invoice_id: string;
  /** minor units */
  amount: number;
}

export async function recordPaymentAllocations(ctx: RuleContext, payment: StoredObject, shares: PaidShare[]): Promise<void> {
  for (const share of shares) {
    await createFromValues(ctx, paymentAllocations, 'payment', {
      entry_type: 'payment', invoice_id: share.invoice_id, amount: share.amount, transaction_id: payment.id, external_payment: false,
    });
  }
}

/**
 * A payment that stops standing releases its allocations, in its own change (the payment's row
 * marked as changing: the item rules then let them go), through the item family's delete: each
 * deletion audited by the door's statement, its invoice recomputed.
 */
export async function releasePaymentAllocations(ctx: RuleContext, payment: StoredObject): Promise<void> {
  const allocations = await allocationsOfTransactions(ctx.tx, ctx.tenant, [payment.id]);
  await deleteNested(ctx, paymentAllocations, allocations.filter((item) => item.type === 'payment'));
}
