/**
 * The capability behind a hosted checkout page or element frame: its client token, looked up by
 * hash whatever its state, so the page can say plainly whether it is unknown, expired or already
 * used.
 */
import type { Db } from '../db/connection.ts';
import type { Tenant } from '../engine/family.ts';
import { hashKey, isClientToken } from '../keys.ts';
import { findClientTokenByHash } from './repository.ts';

export type CheckoutState =
  | { state: 'unknown' }
  | { state: 'expired' | 'used'; options: Record<string, unknown> }
  | { state: 'open'; options: Record<string, unknown>; tenant: Tenant; tokenHash: string };

/**
 * `kind`: the intent the token must carry: checkout_page (the hosted page), checkout_plugin
 * (Payload.Checkout's frame) or processing_account_plugin (Payload.ProcessingAccount's frame).
 */
export async function findCheckout(db: Db, token: string, kind = 'checkout_page'): Promise<CheckoutState> {
  if (!isClientToken(token) || token.length > 128) return { state: 'unknown' };
  const hash = hashKey(token);
  const row = await findClientTokenByHash(db, hash);
  if (!row || row.intent_kind !== kind) return { state: 'unknown' };
  const options = (row.intent[kind] ?? {}) as Record<string, unknown>;
  if (row.uses > 0) return { state: 'used', options };
  if (row.expired || row.status !== 'active') return { state: 'expired', options };
  return { state: 'open', options, tenant: { orgId: row.org_id, environment: row.environment }, tokenHash: hash.toString('hex') };
}
