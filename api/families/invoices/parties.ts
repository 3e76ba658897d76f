/**
 * The payer and biller of a billing object (invoice, billing schedule, payment link): the payer a
 * customer account (or created inline, v1 `customer`), its chosen method one of its own, the biller
 * named or inferred (CONTRACT §12).
 */
import { selectObjectById } from '../../db/objects.ts';
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { createNested } from '../../engine/operations.ts';
import { isPlainObject, type Json } from '../../engine/view.ts';
import { ApiError, invalidAttributes } from '../../errors.ts';
import { accounts } from '../accounts/family.ts';
import { defaultProcessingAccount, ownsMethod } from '../accounts/repository.ts';

type Data = Json;

export function party(data: Data, side: 'payer' | 'biller'): Json {
  return isPlainObject(data[side]) ? (data[side] as Json) : {};
}

export function fieldName(ctx: RuleContext, v1: string, v2: string): string {
  return ctx.version === 'v1' ? v1 : v2;
}

/**
 * The biller of an invoice (or schedule, or link): the one named, else the payer's primary
 * processing account, else the environment's default processing account (CONTRACT §12).
 */
export async function resolveBiller(ctx: RuleContext, billerId: unknown, payer: StoredObject | null): Promise<string> {
  if (typeof billerId === 'string') {
    const biller = await selectObjectById(ctx.tx, accounts.table, ctx.tenant, billerId);
    if (!biller || biller.type !== 'processing') throw invalidAttributes({ [fieldName(ctx, 'processing_id', 'biller[account_id]')]: 'No processing account with this id' });
    return biller.id;
  }
  const primary = payer?.data.primary_processing_id;
  if (typeof primary === 'string') return primary;
  const fallback = await defaultProcessingAccount(ctx.tx, ctx.tenant);
  if (!fallback) throw invalidAttributes({ processing_id: 'Cannot find applicable biller' });
  return fallback.id;
}

/** A payer's chosen method (v2 `payer.method_id`) must be one of the payer's own. */
export async function checkPayerMethod(ctx: RuleContext, data: Data): Promise<void> {
  const payer = isPlainObject(data.payer) ? data.payer : {};
  if (typeof payer.method_id !== 'string') return;
  if (typeof payer.account_id !== 'string' || !(await ownsMethod(ctx.tx, ctx.tenant, payer.account_id, payer.method_id))) {
    throw invalidAttributes({ [fieldName(ctx, 'payment_method_id', 'payer[method_id]')]: 'No payment method with this id belongs to the payer' });
  }
}

/** v1 `customer: {name, email, …}` instead of `customer_id`: the payer is created with the object, in its transaction. */
export async function createInlinePayer(ctx: RuleContext, data: Data): Promise<void> {
  const inline = data.customer;
  delete data.customer;
  if (inline === undefined || inline === null) return;
  if (party(data, 'payer').account_id !== undefined && party(data, 'payer').account_id !== null) {
    throw invalidAttributes({ customer: 'Give customer or customer_id, not both' });
  }
  try {
    const created = await createNested(ctx, accounts, { ...(inline as Json), type: 'customer' });
    data.payer = { ...party(data, 'payer'), account_id: created.id };
  } catch (error) {
    if (error instanceof ApiError && error.status === 400) throw invalidAttributes({ customer: error.details ?? error.message });
    throw error;
  }
}

/** The payer must be a customer account of this environment. */
export async function findPayer(ctx: RuleContext, payerId: unknown): Promise<StoredObject | null> {
  if (typeof payerId !== 'string') return null;
  const payer = await selectObjectById(ctx.tx, accounts.table, ctx.tenant, payerId);
  if (!payer || payer.type !== 'customer') throw invalidAttributes({ [fieldName(ctx, 'customer_id', 'payer[account_id]')]: 'No customer account with this id' });
  return payer;
}
