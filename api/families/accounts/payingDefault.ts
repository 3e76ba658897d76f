/**
 * A customer's paying default is one rule over two families: the method marked
 * `account_defaults.paying` and the customer's `default_payment_method`. Each side changes through
 * its own family's update, so each change is checked, audited and announced by its own family; a
 * side whose change is already under way (`ctx.changing`) is left to it. This file is the method
 * side, set by the customer's change; payingPointer.ts the customer's side, set by the method's.
 */
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { updateNested } from '../../engine/operations.ts';
import { isPlainObject } from '../../engine/view.ts';
import { paymentMethods } from '../payment_methods/family.ts';
import { lockPayingCandidates } from './repository.ts';

function payingOf(method: StoredObject): unknown {
  const defaults = method.data.account_defaults;
  return isPlainObject(defaults) ? defaults.paying : undefined;
}

/** The customer's methods mark `methodId` (or none) as its paying default: the customer's own change sets it. */
export async function markPayingDefault(ctx: RuleContext, accountId: string, methodId: string | null): Promise<void> {
  const methods = (await lockPayingCandidates(ctx.tx, ctx.tenant, accountId, methodId)).filter((method) => !ctx.changing?.has(method.id));
  for (const method of methods) {
    if (method.id !== methodId && payingOf(method) != null) {
      await updateNested(ctx, paymentMethods, method, {}, new Map([['account_defaults.paying', undefined]]));
    }
  }
  const chosen = methods.find((method) => method.id === methodId);
  if (chosen && payingOf(chosen) !== 'payments' && payingOf(chosen) !== 'all') {
    await updateNested(ctx, paymentMethods, chosen, {}, new Map([['account_defaults.paying', 'all']]));
  }
}
