/**
 * The parties a payment takes from what it pays (an invoice, a payment link): a payer becomes the
 * v1 `customer_id` / v2 `sender.account_id`, a biller the v1 `processing_id` / v2
 * `receiver.account_id`. A party the payment left out is filled in; one that contradicts is refused.
 */
import type { RuleContext } from '../../engine/family.ts';
import { isPlainObject, type Json } from '../../engine/view.ts';
import { invalidAttributes } from '../../errors.ts';

const PLACES = {
  payer: { v1: 'customer_id', v2: 'sender' },
  biller: { v1: 'processing_id', v2: 'receiver' },
} as const;

export function fillPaymentParty(ctx: RuleContext, data: Json, role: 'payer' | 'biller', expected: string | undefined, source: string): void {
  if (!expected) return;
  const place = PLACES[role];
  const holder: Json = ctx.version === 'v1' ? data : isPlainObject(data[place.v2]) ? { ...(data[place.v2] as Json) } : {};
  const key = ctx.version === 'v1' ? place.v1 : 'account_id';
  if (holder[key] === undefined || holder[key] === null) holder[key] = expected;
  else if (holder[key] !== expected) {
    throw invalidAttributes({ [ctx.version === 'v1' ? place.v1 : `${place.v2}[account_id]`]: `Must be the ${source}'s ${role} (${expected})` });
  }
  if (ctx.version === 'v2') data[place.v2] = holder;
}
