/**
 * Paying through a link: a payment that names `payment_link_id` takes the link's amount (unless
 * the link lets the payer choose), payer and biller, and pays the link's invoice. The link is
 * locked while the payment is decided, so a one-time link is paid once; once the payment stands,
 * a one-time link becomes `completed` (with `transaction_id`) and emits `payment_link:status`.
 */
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { updateNested } from '../../engine/operations.ts';
import { isPlainObject, type Json } from '../../engine/view.ts';
import { invalidAttributes } from '../../errors.ts';
import { fillPaymentParty } from '../invoices/paymentParties.ts';
import { paymentLinks } from './family.ts';
import { lockPaymentLink } from './repository.ts';

function accountOf(data: Json, side: string): string | undefined {
  const party = data[side];
  return isPlainObject(party) && typeof party.account_id === 'string' ? party.account_id : undefined;
}

export async function applyPaymentLink(ctx: RuleContext, type: string, data: Json): Promise<void> {
  if (data.payment_link_id === undefined || data.payment_link_id === null) return;
  if (type !== 'payment') throw invalidAttributes({ payment_link_id: 'Only a payment is made through a payment link' });
  const link = await lockPaymentLink(ctx.tx, ctx.tenant, String(data.payment_link_id));
  if (!link) throw invalidAttributes({ payment_link_id: 'No payment link with this id' });
  if (link.data.status !== 'active') throw invalidAttributes({ payment_link_id: `This payment link is ${String(link.data.status)}` });
  const fixed = link.data.amount_editable !== true ? link.data.amount : undefined;
  if (data.amount === undefined || data.amount === null) data.amount = link.data.amount ?? undefined;
  else if (typeof fixed === 'number' && data.amount !== fixed) throw invalidAttributes({ amount: `Must be ${fixed / 100}, the payment link's amount` });
  fillPaymentParty(ctx, data, 'payer', accountOf(link.data, 'payer'), 'payment link');
  fillPaymentParty(ctx, data, 'biller', accountOf(link.data, 'biller'), 'payment link');
  if (typeof link.data.invoice_id === 'string' && data.allocations === undefined) data.allocations = [{ invoice_id: link.data.invoice_id }];
}

export async function completePaymentLink(ctx: RuleContext, payment: StoredObject): Promise<void> {
  const linkId = payment.data.payment_link_id;
  if (typeof linkId !== 'string' || ['declined', 'voided', 'rejected'].includes(String(payment.data.status))) return;
  const link = await lockPaymentLink(ctx.tx, ctx.tenant, linkId);
  if (!link || link.type !== 'one_time' || link.data.status !== 'active') return;
  // Through the family's update: its rules accept `completed` with the paying transaction, and
  // its events rule announces the new status.
  await updateNested(ctx, paymentLinks, link, {}, new Map<string, unknown>([['status', 'completed'], ['transaction_id', payment.id]]));
}
