/**
 * The customer's side of its paying default (see payingDefault.ts): `default_payment_method`
 * follows the method that holds the default, through the account family's update. The payment
 * method family's rule calls it; the registry hands it over (api/families/index.ts).
 */
import type { RuleContext } from '../../engine/family.ts';
import { updateNested } from '../../engine/operations.ts';
import { accounts } from './family.ts';
import { lockAccount } from './repository.ts';

/**
 * The customer's pointer follows its paying default method (`methodId`; null: none, and then
 * only where it pointed at `from`). Registered with the payment method family, whose rule calls it.
 */
export async function followPayingDefault(ctx: RuleContext, accountId: string, methodId: string | null, from?: string): Promise<void> {
  if (ctx.changing?.has(accountId)) return;
  const account = await lockAccount(ctx.tx, ctx.tenant, accountId);
  if (!account || account.type !== 'customer') return;
  const pointer = account.data.default_payment_method ?? null;
  if ((from !== undefined && pointer !== from) || pointer === methodId) return;
  await updateNested(ctx, accounts, account, {}, new Map([['default_payment_method', methodId ?? undefined]]));
}
