/**
 * A card's answer from the processor, for a transaction being created. Always through the
 * create's decisions, which ask the processor outside any database transaction (see
 * api/processorDecisions.ts); a create without them is a caller that skipped the create service.
 */
import type { RuleContext } from '../../engine/family.ts';
import type { CardAuthorization } from '../../processor.ts';

export function authorizeCard(ctx: RuleContext, number: string): Promise<CardAuthorization> {
  if (!ctx.decisions) throw new Error('Card payments are created through the create service, which asks the processor outside the database transaction');
  return ctx.decisions.authorizeCard(number);
}
