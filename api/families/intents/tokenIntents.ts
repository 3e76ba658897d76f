/**
 * A client token made through `POST /access_tokens` with an element intent is an intent too
 * (CONTRACT §13: v1 creates element intents that way): it is made by the intent family's create,
 * as `POST /intents` makes one (its rules mint the token, store the intent without the secret,
 * schedule its expiry; audited as the request's actor), and answered as the token.
 */
import { createNested } from '../../engine/operations.ts';
import type { RuleContext } from '../../engine/family.ts';
import { clientTokenAnswer, type TokenIntent } from './clientTokens.ts';
import { intents } from './family.ts';

export async function createTokenIntent(ctx: RuleContext, intent: TokenIntent): Promise<Record<string, unknown>> {
  const revealed = new Map<string, Record<string, unknown>>();
  const row = await createNested({ ...ctx, revealed }, intents, { type: intent.kind, [intent.kind]: intent.options });
  const token = String(revealed.get(row.id)?.client_token);
  return clientTokenAnswer(ctx.tenant, token, { kind: intent.kind, options: row.data[intent.kind] as Record<string, unknown> }, new Date(String(row.data.expires_at)));
}
