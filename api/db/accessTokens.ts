/** Client tokens, stored by SHA-256 hash like secret keys. */
import { rows, type Db } from './connection.ts';
import type { Tenant } from './tenant.ts';

export interface AccessTokenRecord {
  token_hash: Buffer;
  org_id: string;
  environment: 'test' | 'live';
  intent_kind: string;
  intent: Record<string, unknown>;
  uses: number;
  expires_at: Date;
  payment_link_id: string | null;
}

export async function insertAccessToken(db: Db, token: { hash: Buffer; prefix: string; tenant: Tenant; kind: string; intent: Record<string, unknown>; expiresAt: Date; paymentLinkId?: string }): Promise<void> {
  await rows(db,
    `insert into access_tokens (token_hash, id_prefix, org_id, environment, intent_kind, intent, expires_at, payment_link_id) values (?, ?, ?, ?, ?, ?, ?, ?)`,
    [token.hash, token.prefix, token.tenant.orgId, token.tenant.environment, token.kind, JSON.stringify(token.intent), token.expiresAt, token.paymentLinkId ?? null]);
}

/** Whether the token with this hash can still pay, with at least `marginMs` of its life left. */
export async function isUnspentAccessToken(db: Db, hash: Buffer, marginMs: number): Promise<boolean> {
  const found = await rows(db,
    `select 1 from access_tokens where token_hash = ? and status = 'active' and uses = 0 and expires_at > now() + make_interval(secs => ?)`,
    [hash, marginMs / 1000]);
  return found.length > 0;
}

/** Ends every usable token of the link but the newest `keep`: past it, a page view retires the oldest. */
export async function retireOldLinkTokens(db: Db, paymentLinkId: string, keep: number): Promise<void> {
  await rows(db,
    `update access_tokens set expires_at = now()
      where token_hash in (select token_hash from access_tokens
                            where payment_link_id = ? and status = 'active' and uses = 0 and expires_at > now()
                            order by created_at desc offset ?)`,
    [paymentLinkId, keep]);
}

export async function findActiveAccessToken(db: Db, hash: Buffer): Promise<AccessTokenRecord | null> {
  const found = await rows<AccessTokenRecord>(db,
    `select token_hash, org_id, environment, intent_kind, intent, uses, expires_at, payment_link_id from access_tokens
      where token_hash = ? and status = 'active' and expires_at > now()`,
    [hash]);
  return found[0] ?? null;
}
