/** A client token's one use: spent in the caller's transaction, finishing the element intent behind it. */
import type { Db } from '../../db/connection.ts';
import { recordEvents, statusEvent } from '../../db/events.ts';
import type { Tenant } from '../../engine/family.ts';
import { spendTokenOfIntent } from './repository.ts';
import { INTENT_STATUS_TRIGGER } from './triggers.ts';

/** False when the token was already used, expired or revoked. */
export async function spendClientToken(tx: Db, tenant: Tenant, tokenHash: string): Promise<boolean> {
  const { spent, finished } = await spendTokenOfIntent(tx, tenant, tokenHash);
  if (finished) {
    await recordEvents(tx, tenant, [statusEvent(INTENT_STATUS_TRIGGER, 'intent', finished, 'finished')]);
  }
  return spent;
}
