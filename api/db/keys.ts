/** Orgs and API keys. Only SHA-256 hashes of secret keys are stored. */
import type { Db } from './connection.ts';

export interface KeyRecord {
  id: string;
  org_id: string;
  org_name: string;
  environment: 'test' | 'live';
  key_prefix: string;
  settings: Record<string, unknown>;
  /** null: every collection */
  scopes: string[] | null;
  created_at: Date;
  revoked_at: Date | null;
  /** a rolled key works until then */
  expires_at: Date | null;
}

/** The org of this name (`created` when this call made it). */
export async function findOrCreateOrg(db: Db, id: string, name: string): Promise<{ id: string; created: boolean }> {
  const result = await db.raw(
    `insert into orgs (id, name) values (?, ?)
     on conflict (name) do update set name = excluded.name
     returning id, (xmax = 0) as created`,
    [id, name],
  );
  return { id: result.rows[0].id, created: result.rows[0].created };
}

export interface NewKey {
  id: string;
  orgId: string;
  environment: string;
  hash: Buffer;
  prefix: string;
  settings: Record<string, unknown>;
  scopes?: string[] | null;
  rolledFrom?: string;
}

export async function insertKey(db: Db, key: NewKey): Promise<void> {
  await db.raw(
    'insert into api_keys (id, org_id, environment, key_hash, key_prefix, settings, scopes, rolled_from) values (?, ?, ?, ?, ?, ?, ?, ?)',
    [key.id, key.orgId, key.environment, key.hash, key.prefix, JSON.stringify(key.settings), key.scopes ?? null, key.rolledFrom ?? null],
  );
}

/** Active keys (of table alias `k`) whose id is `prefix` or whose shown prefix starts with it (text, not a LIKE pattern). */
function activeKeysNamedBy(prefix: string): { sql: string; bindings: string[] } {
  return {
    sql: `k.revoked_at is null and (k.expires_at is null or k.expires_at > now()) and (k.id = ? or k.key_prefix like ? || '%')`,
    bindings: [prefix, prefix.replace(/[\\%_]/g, (c) => `\\${c}`)],
  };
}

/** The one active key whose id or shown prefix starts with `prefix` (none or several: null and how many). */
export async function findKeyToRoll(db: Db, prefix: string): Promise<{ key: KeyRecord | null; matches: number }> {
  const named = activeKeysNamedBy(prefix);
  const result = await db.raw(
    `select k.id, k.org_id, o.name as org_name, k.environment, k.key_prefix, k.settings, k.scopes, k.created_at, k.revoked_at, k.expires_at
       from api_keys k join orgs o on o.id = k.org_id
      where ${named.sql}`,
    named.bindings,
  );
  return { key: result.rows.length === 1 ? result.rows[0] : null, matches: result.rows.length };
}

/** The old key of a roll keeps working until `expiresAt` (now: at once). */
export async function expireKey(db: Db, id: string, expiresAt: Date): Promise<void> {
  await db.raw('update api_keys set expires_at = least(coalesce(expires_at, ?), ?) where id = ?', [expiresAt, expiresAt, id]);
}

export async function findActiveKeyByHash(db: Db, hash: Buffer): Promise<KeyRecord | null> {
  const result = await db.raw(
    `select k.id, k.org_id, o.name as org_name, k.environment, k.key_prefix, k.settings, k.scopes, k.created_at, k.revoked_at, k.expires_at
       from api_keys k join orgs o on o.id = k.org_id
      where k.key_hash = ? and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())`,
    [hash],
  );
  return result.rows[0] ?? null;
}

export async function listKeys(db: Db): Promise<KeyRecord[]> {
  const result = await db.raw(
    `select k.id, k.org_id, o.name as org_name, k.environment, k.key_prefix, k.settings, k.scopes, k.created_at, k.revoked_at, k.expires_at
       from api_keys k join orgs o on o.id = k.org_id order by k.created_at`,
  );
  return result.rows;
}

/**
 * Revokes the one active key whose id is `prefix` or whose shown prefix starts with it; when
 * several match, none is revoked (a short prefix such as `test_secret_key_` names every test key
 * of every org). Returns how many matched, counted in the same statement that revokes.
 */
export async function revokeKey(db: Db, prefix: string): Promise<{ matches: number; revoked: boolean }> {
  const named = activeKeysNamedBy(prefix);
  const result = await db.raw(
    `with matching as (
       select k.id from api_keys k where ${named.sql} for update
     ), revoked as (
       update api_keys set revoked_at = now()
        where id in (select id from matching) and (select count(*) from matching) = 1
        returning id
     )
     select (select count(*) from matching)::int as matches, (select count(*) from revoked)::int as revoked`,
    named.bindings,
  );
  const { matches, revoked } = result.rows[0];
  return { matches, revoked: revoked === 1 };
}

export async function countKeys(db: Db): Promise<number> {
  const result = await db.raw('select count(*)::int as n from api_keys where revoked_at is null');
  return result.rows[0].n;
}

/** The org's keys in one environment, newest first (for `/users`; prefixes only). */
export async function listOrgKeys(db: Db, orgId: string, environment: string): Promise<KeyRecord[]> {
  const result = await db.raw(
    `select k.id, k.org_id, o.name as org_name, k.environment, k.key_prefix, k.settings, k.scopes, k.created_at, k.revoked_at, k.expires_at
       from api_keys k join orgs o on o.id = k.org_id where k.org_id = ? and k.environment = ? order by k.created_at desc, k.id desc`,
    [orgId, environment],
  );
  return result.rows;
}
