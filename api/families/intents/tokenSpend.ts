/**
 * A client token's one use: spent in the caller's transaction, and the pending element intent
 * behind it finished there too, through the intents family's update (its rules, the door's
 * audited statement, the status event), so the spend and the finish commit or roll back together.
 */
import type { RuleContext } from '../../engine/family.ts';
import { updateNested } from '../../engine/operations.ts';
import { intentFamily } from './declared.ts';
import { lockPendingIntentOfToken, spendToken } from './repository.ts';

/** False when the token was already used, expired or revoked. */
export async function spendClientToken(ctx: RuleContext, tokenHash: string): Promise<boolean> {
  if (!(await spendToken(ctx.tx, tokenHash))) return false;
  const intent = await lockPendingIntentOfToken(ctx.tx, ctx.tenant, tokenHash);
  if (intent) await updateNested(ctx, intentFamily(), intent, {}, new Map([['status', 'finished']]));
  return true;
}
