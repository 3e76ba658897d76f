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
}

export async function insertAccessToken(db: Db, token: { hash: Buffer; prefix: string; tenant: Tenant; kind: string; intent: Record<string, unknown>; expiresAt: Date }): Promise<void> {
  await rows(db,
    `insert into access_tokens (token_hash, id_prefix, org_id, environment, intent_kind, intent, expires_at) values (?, ?, ?, ?, ?, ?, ?)`,
    [token.hash, token.prefix, token.tenant.orgId, token.tenant.environment, token.kind, JSON.stringify(token.intent), token.expiresAt]);
}

export async function findActiveAccessToken(db: Db, hash: Buffer): Promise<AccessTokenRecord | null> {
  const found = await rows<AccessTokenRecord>(db,
    `select token_hash, org_id, environment, intent_kind, intent, uses, expires_at from access_tokens
      where token_hash = ? and status = 'active' and expires_at > now()`,
    [hash]);
  return found[0] ?? null;
}
