/**
 * Reverse-flow transfers (CONTRACT §14): a v2 payment to one receiver whose `transfers` name
 * several senders, `{amount, sender{account_id, method_id}}` each. Every sender is charged its
 * part in the payment's database transaction: each part's method is checked (and, for cards,
 * decided by the processor) before anything is written, so a decline of any part refuses the whole
 * payment. The payment's amount is the sum of the parts; the first part names the payment's
 * sender; each part is a `transfer` row with the sender's account.
 */
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { isPlainObject, type Json } from '../../engine/view.ts';
import { parseMoney } from '../../schema/values.ts';
import { invalidAttributes } from '../../errors.ts';
import { newId } from '../../ids.ts';
import { isKept, NOT_KEPT } from '../payment_methods/statuses.ts';
import { authorizeCard } from './decide.ts';
import * as repo from './repository.ts';

export function isReverseFlow(ctx: RuleContext, type: string, data: Json): boolean {
  return ctx.version === 'v2' && type === 'payment' && Array.isArray(data.transfers) && data.transfers.length > 0
    && (data.transfers as unknown[]).every((item) => isPlainObject(item) && isPlainObject(item.sender));
}

export interface ReverseFlowPlan {
  plan: Json[];
  /** the first part's sender, shown as the payment's sender */
  customerId: string;
  method: StoredObject;
}

/** An error at `transfers[i][...path]`, nested as every other error's details are. */
function partError(i: number, path: string[], message: string): Error {
  const detail = path.reduceRight<Json | string>((inner, key) => ({ [key]: inner }), message);
  return invalidAttributes({ transfers: { [i]: detail } });
}

async function partMethod(ctx: RuleContext, accountId: string, methodId: unknown, i: number): Promise<StoredObject> {
  const method = typeof methodId === 'string' ? await repo.findMethod(ctx.tx, ctx.tenant, methodId) : await repo.defaultPayingMethod(ctx.tx, ctx.tenant, accountId);
  if (!method) throw partError(i, ['sender', 'method_id'], typeof methodId === 'string' ? 'No payment method with this id' : 'The sender has no default payment method');
  if (method.data.account_id !== accountId) throw partError(i, ['sender', 'method_id'], 'Must be a payment method of the sender');
  if (!isKept(method.data)) throw partError(i, ['sender', 'method_id'], NOT_KEPT);
  if (method.type === 'card') {
    const outcome = await authorizeCard(ctx, ctx.domain.vault.decrypt(String((method.data.card as Json).sealed_number)));
    if (!outcome.approved) throw partError(i, ['sender', 'method_id'], outcome.message);
  }
  return method;
}

export async function planReverseFlow(ctx: RuleContext, data: Json): Promise<ReverseFlowPlan> {
  const plan: Json[] = [];
  const methods: StoredObject[] = [];
  const senders: string[] = [];
  let total = 0;
  for (const [i, item] of (data.transfers as Json[]).entries()) {
    const sender = item.sender as Json;
    const amount = parseMoney(item.amount);
    if (!amount.ok || (amount.value as number) <= 0) throw partError(i, ['amount'], amount.ok ? 'Must be more than zero' : amount.reason);
    if (typeof sender.account_id !== 'string') throw partError(i, ['sender', 'account_id'], 'Required');
    const account = await repo.findAccount(ctx.tx, ctx.tenant, sender.account_id);
    if (!account) throw partError(i, ['sender', 'account_id'], 'No account with this id');
    methods.push(await partMethod(ctx, account.id, sender.method_id, i));
    senders.push(account.id);
    total += amount.value as number;
    plan.push({ id: newId('trf'), entry_type: 'transfer', account_id: account.id, amount: amount.value, assoc_transaction_id: null });
  }
  if (typeof data.amount === 'number' && data.amount !== total) throw invalidAttributes({ amount: 'Must equal the sum of the transfers' });
  data.amount = total;
  return { plan, customerId: senders[0], method: methods[0] };
}
