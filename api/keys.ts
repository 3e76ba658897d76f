/** Secret keys: `test_secret_key_<32 base62>` / `secret_key_<32 base62>`, shown once, stored hashed. */
import { createHash } from 'node:crypto';
import type { Db } from './db/connection.ts';
import { findOrCreateOrg, insertKey } from './db/keys.ts';
import { insertDefaultProcessingAccount } from './families/accounts/repository.ts';
import { newId, randomBase62 } from './ids.ts';

export type Environment = 'test' | 'live';

export function hashKey(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

export function keyEnvironment(secret: string): Environment | null {
  if (secret.startsWith('test_secret_key_') || secret.startsWith('test_client_key_')) return 'test';
  if (secret.startsWith('secret_key_') || secret.startsWith('client_key_')) return 'live';
  return null;
}

export function isClientToken(secret: string): boolean {
  return secret.startsWith('test_client_key_') || secret.startsWith('client_key_');
}

export interface CreatedKey {
  id: string;
  orgId: string;
  secret: string;
  prefix: string;
}

export interface KeySettings {
  authorize_and_capture?: boolean;
}

export async function createKey(db: Db, orgName: string, environment: Environment, settings: KeySettings = {}): Promise<CreatedKey> {
  const org = await findOrCreateOrg(db, newId('org'), orgName);
  const orgId = org.id;
  // A new org's test environment starts with an active processing account, its default (CONTRACT §3).
  if (org.created) await insertDefaultProcessingAccount(db, { orgId, environment: 'test' }, newId('acct'), orgName);
  const secret = `${environment === 'test' ? 'test_' : ''}secret_key_${randomBase62(32)}`;
  // The prefix identifies a key in listings and `keys revoke` without revealing it.
  const prefix = secret.slice(0, secret.length - 24);
  const id = newId('key');
  await insertKey(db, { id, orgId, environment, hash: hashKey(secret), prefix, settings: { ...settings } });
  return { id, orgId, secret, prefix };
}
