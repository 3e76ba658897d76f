/** Secret keys: `test_secret_key_<32 base62>` / `secret_key_<32 base62>`, shown once, stored hashed. */
import { hash } from 'node:crypto';
import { shownPrefix } from './credentials.ts';
import type { Db } from './db/connection.ts';
import { expireKey, findKeyToRoll, findOrCreateOrg, insertKey } from './db/keys.ts';
import type { DomainServices } from './engine/family.ts';
import { openDefaultProcessingAccount } from './families/accounts/defaultAccount.ts';
import { newId, randomBase62 } from './ids.ts';

export type Environment = 'test' | 'live';

export function hashKey(secret: string): Buffer {
  return hash('sha256', secret, 'buffer');
}

/** `hashKey` as hex: what a process caches a key under, so its secret is never a map key. */
export function hashKeyHex(secret: string): string {
  return hash('sha256', secret, 'hex');
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

export { shownPrefix };

function newSecret(environment: Environment): { secret: string; prefix: string } {
  const secret = `${environment === 'test' ? 'test_' : ''}secret_key_${randomBase62(32)}`;
  return { secret, prefix: shownPrefix(secret) };
}

/**
 * A key of the org named `orgName`, made with the org when it is new, in one transaction: a new
 * org's test environment starts with its default processing account, made by the account
 * family's create as the system (`domain`: the process's, for that create's rules).
 * `scopes`: what a restricted key may do (api/scopes.ts); absent, everything.
 */
export async function createKey(db: Db, domain: DomainServices, orgName: string, environment: Environment, settings: KeySettings = {}, scopes: string[] | null = null): Promise<CreatedKey> {
  return db.transaction(async (tx) => {
    const org = await findOrCreateOrg(tx, newId('org'), orgName);
    const orgId = org.id;
    if (org.created) {
      const principal = { kind: 'secret' as const, keyId: 'new_org', settings: {} };
      await openDefaultProcessingAccount({ tx, tenant: { orgId, environment: 'test' }, version: 'v1', principal, domain }, orgName);
    }
    const { secret, prefix } = newSecret(environment);
    const id = newId('key');
    await insertKey(tx, { id, orgId, environment, hash: hashKey(secret), prefix, settings: { ...settings }, scopes });
    return { id, orgId, secret, prefix };
  });
}

export class KeyNotFound extends Error {}

/**
 * A new key with the same org, environment, settings and scopes as the one `prefix` names; the
 * old one keeps working for `graceMs` (0: stops at once), in one transaction.
 */
export async function rollKey(db: Db, prefix: string, graceMs: number, now = new Date()): Promise<CreatedKey & { expiresAt: Date }> {
  return db.transaction(async (tx) => {
    const { key: old, matches } = await findKeyToRoll(tx, prefix);
    if (!old) throw new KeyNotFound(matches === 0 ? `no active key matches ${prefix}` : `${matches} keys match ${prefix}: give more of the prefix`);
    const { secret, prefix: shown } = newSecret(old.environment);
    const id = newId('key');
    await insertKey(tx, { id, orgId: old.org_id, environment: old.environment, hash: hashKey(secret), prefix: shown, settings: old.settings, scopes: old.scopes, rolledFrom: old.id });
    const expiresAt = new Date(now.getTime() + graceMs);
    await expireKey(tx, old.id, expiresAt);
    return { id, orgId: old.org_id, secret, prefix: shown, expiresAt };
  });
}
