/**
 * What funding moves, as arithmetic on a transaction's stored amounts (minor units): shared by the
 * funding run and requested releases, below both.
 */
import type { Leg } from './ledger.ts';

/** Money a transaction moves into its processing account, before fees (the SQL `ledger_gross`). */
export function grossOf(type: string, amount: number): number {
  if (type === 'payment' || type === 'chargeback_reversal') return amount;
  if (type === 'refund' || type === 'payout' || type === 'chargeback') return -amount;
  return 0;
}

export function netOf(item: { type: string; amount: number; fee: number }): number {
  return grossOf(item.type, item.amount) - item.fee;
}

/** The legs of money leaving the available balance for the funding method (negative: coming back from it). */
export function fundingLegs(accountId: string, amount: number): Leg[] {
  return [{ accountId, bucket: 'available', amount: -amount }, { accountId, bucket: amount >= 0 ? 'funded' : 'withdrawn', amount }];
}
