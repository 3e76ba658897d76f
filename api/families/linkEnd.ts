/**
 * The end of a link's life, for both link tables (link intents and payment activations): it
 * finishes with the account its enrollment made, or expires. Either is a change of the link's
 * family through its update (rules, write, the status event), so this sits beside both families.
 */
import type { Family, RuleContext, StoredObject } from '../engine/family.ts';
import { updateNested } from '../engine/operations.ts';
import { intents } from './intents/family.ts';
import type { LinkTable } from './intents/repository.ts';
import { paymentActivations } from './payment_activations/family.ts';

const LINK_FAMILIES: Record<LinkTable, Family> = { intents, payment_activations: paymentActivations };

/** The locked pending link becomes `finished`, recording the account its enrollment made. */
export async function finishLink(ctx: RuleContext, table: LinkTable, link: StoredObject, accountId: string): Promise<void> {
  await updateNested(ctx, LINK_FAMILIES[table], link, {}, new Map([['status', 'finished'], ['account_id', accountId]]));
}

/** The locked pending link becomes `expired`. */
export async function expireLinkRow(ctx: RuleContext, table: LinkTable, link: StoredObject): Promise<void> {
  await updateNested(ctx, LINK_FAMILIES[table], link, {}, new Map([['status', 'expired']]));
}
