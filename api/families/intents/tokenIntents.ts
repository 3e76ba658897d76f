/**
 * A client token made through `POST /access_tokens` with an element intent is an intent too
 * (CONTRACT §13: v1 creates element intents that way): the row is written beside the token, in the
 * same transaction, so `/intents` lists it and it finishes or expires with the token as an intent
 * made through `/intents` does.
 */
import { insertObjects } from '../../db/objects.ts';
import type { DomainServices, RuleContext, Tenant } from '../../engine/family.ts';
import type { Db } from '../../db/connection.ts';
import { newId } from '../../ids.ts';
import { hashKey } from '../../keys.ts';
import { intents } from './family.ts';
import { scheduleExpiry } from './links.ts';

export async function recordTokenIntent(tx: Db, tenant: Tenant, domain: DomainServices, token: Record<string, unknown>): Promise<void> {
  const [kind, options] = Object.entries((token.intent ?? {}) as Record<string, unknown>)[0] ?? [];
  if (!kind) return;
  const now = domain.now();
  const expiresAt = new Date(`${String(token.expires_at).replace(' ', 'T')}Z`).toISOString();
  const [row] = await insertObjects(tx, intents.table, tenant, [{
    id: newId(intents.idPrefix), type: kind, created_at: now, modified_at: now,
    data: { [kind]: options, status: 'pending', token_hash: hashKey(String(token.id)).toString('hex'), expires_at: expiresAt },
  }]);
  const ctx: RuleContext = { tx, tenant, version: 'v1', principal: { kind: 'secret', keyId: 'access_tokens', settings: {} }, domain };
  await scheduleExpiry(ctx, 'intents', row);
}
