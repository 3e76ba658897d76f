/**
 * Deposits and withdrawals asked for through the API (CONTRACT §14). A deposit releases cleared
 * money to the funding method (the manual style's only way out): never more than the available
 * balance, by default all of it, and the held transactions it covers, oldest first, become
 * funded. A withdrawal pulls money from the funding method into the available balance. Both lock
 * the processing account, so they queue with funding runs and with each other.
 */
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import type { Json } from '../../engine/view.ts';
import { invalidAttributes } from '../../errors.ts';
import { newId } from '../../ids.ts';
import { insertTransfers } from '../transactions/repository.ts';
import { bucketTotal, postLegs } from './ledger.ts';
import { fundingLegs, netOf } from './amounts.ts';
import { fundHeld, recordFundingSteps, type FundingItem } from '../transactions/funding.ts';
import { fundingMethod, lockHeldItems, lockProcessingAccount } from './repository.ts';

export async function defaultFundingMethod(ctx: RuleContext, processingId: string | undefined): Promise<StoredObject | null> {
  return processingId ? fundingMethod(ctx.tx, ctx.tenant, processingId) : null;
}

/** Cleared money a release may pay out: available, and held money now that a funding method exists. */
async function releasable(ctx: RuleContext, accountId: string): Promise<number> {
  return (await bucketTotal(ctx.tx, ctx.tenant, accountId, 'available')) + (await bucketTotal(ctx.tx, ctx.tenant, accountId, 'held'));
}

/**
 * Checks a requested deposit or withdrawal under the account's lock: the method must be one of the
 * account's bank accounts, and a deposit never exceeds what is releasable less what earlier items
 * of the same request released. Fills in the default amount (all of it).
 */
export async function planRelease(ctx: RuleContext, type: string, data: Json, processingId: string, method: StoredObject | null): Promise<void> {
  const field = ctx.version === 'v1' ? 'processing_id' : type === 'deposit' ? 'receiver[account_id]' : 'sender[account_id]';
  if (!(await lockProcessingAccount(ctx.tx, ctx.tenant, processingId))) throw invalidAttributes({ [field]: 'Must be a processing account' });
  if (!method || method.type !== 'bank_account' || method.data.account_id !== processingId) {
    throw invalidAttributes({ payment_method_id: 'Must be a bank account of the processing account (its funding method by default)' });
  }
  if (type !== 'deposit') return;
  const planned = (ctx.plannedReleases ??= new Map());
  const available = (await releasable(ctx, processingId)) - (planned.get(processingId) ?? 0);
  const amount = typeof data.amount === 'number' ? data.amount : available;
  if (amount <= 0) throw invalidAttributes({ amount: 'Nothing is available to deposit' });
  if (amount > available) throw invalidAttributes({ amount: `Must not exceed the available balance (${(Math.max(available, 0) / 100).toFixed(2)})` });
  planned.set(processingId, (planned.get(processingId) ?? 0) + amount);
  data.amount = amount;
}

/**
 * Which held transactions a release pays out: the oldest, until what stays held is covered by
 * what stays available (the money of held transactions is in the available balance, so after
 * a deposit the newest ones that still fit in it stay held, and the rest count as paid); a
 * deposit of all that is available pays out every held transaction.
 */
export function paidOut(held: FundingItem[], availableAfter: number): FundingItem[] {
  // Nothing left available: everything held is paid out (a chargeback and its reversal included).
  if (availableAfter <= 0) return held;
  let remaining = held.reduce((sum, item) => sum + netOf(item), 0);
  let count = 0;
  while (count < held.length && remaining > availableAfter) remaining -= netOf(held[count++]);
  return held.slice(0, count);
}

/** The ledger posting of a requested deposit or withdrawal, and the held transactions a deposit funds. */
export async function postRelease(ctx: RuleContext, row: StoredObject): Promise<void> {
  const accountId = String(row.data.processing_id);
  const amount = Number(row.data.amount);
  await postLegs(ctx.tx, ctx.tenant, row.id, `fund:${row.id}`, fundingLegs(accountId, row.type === 'deposit' ? amount : -amount));
  if (row.type !== 'deposit') return;
  // Money held for want of a funding method joins the available balance first.
  const held = await bucketTotal(ctx.tx, ctx.tenant, accountId, 'held');
  await postLegs(ctx.tx, ctx.tenant, row.id, `release:${row.id}`, [{ accountId, bucket: 'held', amount: -held }, { accountId, bucket: 'available', amount: held }]);
  const items = paidOut(await lockHeldItems(ctx.tx, ctx.tenant, accountId), await bucketTotal(ctx.tx, ctx.tenant, accountId, 'available'));
  await fundHeld(ctx, items.map((item) => item.id));
  await insertTransfers(ctx.tx, ctx.tenant, items.map((item) => ({
    id: newId('trf'), transaction_id: row.id, account_id: accountId, assoc_transaction_id: item.id, entry_type: 'deposit', amount: netOf(item),
  })));
  await recordFundingSteps(ctx.tx, ctx.tenant, items.map((item) => ({ id: item.id, amount: item.amount, depositId: row.id, steps: ['fund'] })));
}
