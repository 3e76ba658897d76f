/**
 * Card and account numbers, tax ids and secrets at rest: AES-256-GCM under a key from
 * SETTLE_VAULT_KEY (base64, 32 bytes). Fingerprints are HMAC-SHA256 under a key derived from the
 * same secret, so equal numbers match without decrypting.
 *
 * A sealed value names its key (`v2.<key id>.<iv>.<tag>.<body>`), so during a rotation values
 * sealed under the previous key (SETTLE_VAULT_PREVIOUS_KEYS) still open while new ones are sealed
 * under the current key. Values written before key ids (`v1.<iv>.<tag>.<body>`) are opened by
 * whichever known key authenticates them.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pooledRandomBytes } from './randomPool.ts';

export interface Vault {
  /** the current key's id: what the database records and a sealed value names */
  keyId: string;
  /** the ids of the previous keys this process can still open */
  previousKeyIds: string[];
  encrypt: (plain: string) => string;
  decrypt: (sealed: string) => string;
  fingerprint: (plain: string) => string;
  /** whether a value is sealed under the current key (a rotation skips those) */
  sealedWithCurrent: (sealed: string) => boolean;
}

/** A sealed value as the vault writes it, old format or new. */
export const SEALED = /^(v1\.[A-Za-z0-9+/=]+|v2\.[0-9a-f]{16}\.[A-Za-z0-9+/=]+)\.[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]*$/;

export function parseVaultKey(text: string, name = 'SETTLE_VAULT_KEY'): Buffer {
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== 32) throw new Error(`${name} must be 32 bytes, base64-encoded`);
  return key;
}

/** The id a key is known by: a hash of a key derived for that purpose alone (never the key). */
export function vaultKeyId(secret: Buffer): string {
  const derived = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'settle vault key id', 32));
  return createHash('sha256').update(derived).digest('hex').slice(0, 16);
}

export function vaultKeyFile(dataDir: string): string {
  return path.join(dataDir, 'vault.key');
}

/** The given key, else the one in the data directory, else null (nothing is generated here). */
export function readVaultSecret(given: string | undefined, dataDir: string): Buffer | null {
  if (given) return parseVaultKey(given);
  try {
    return parseVaultKey(fs.readFileSync(vaultKeyFile(dataDir), 'utf8'), vaultKeyFile(dataDir));
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return null;
    throw error;
  }
}

/** Writes a new key into the data directory, or reads the one another process wrote first. */
export function generateVaultSecret(dataDir: string): Buffer {
  const file = vaultKeyFile(dataDir);
  fs.mkdirSync(dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, randomBytes(32).toString('base64') + '\n', { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as { code?: string }).code !== 'EEXIST') throw error;
  }
  return parseVaultKey(fs.readFileSync(file, 'utf8'), file);
}

/** For callers without a database at hand (tools, unit tests): the given or stored key, or a new one. */
export function loadVaultSecret(given: string | undefined, dataDir: string): Buffer {
  return readVaultSecret(given, dataDir) ?? generateVaultSecret(dataDir);
}

interface Keyring {
  id: string;
  /** a KeyObject, made once: handing the cipher a Buffer costs it a new key object each call (a third of a seal) */
  encryption: KeyObject;
}

function derivedKey(secret: Buffer, purpose: string): KeyObject {
  return createSecretKey(Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), purpose, 32)));
}

function keyring(secret: Buffer): Keyring {
  return { id: vaultKeyId(secret), encryption: derivedKey(secret, 'settle vault encryption') };
}

function open(key: KeyObject, iv: string, tag: string, body: string): string {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
}

export function createVault(secret: Buffer, previous: Buffer[] = []): Vault {
  const current = keyring(secret);
  const older = previous.map(keyring).filter((k) => k.id !== current.id);
  const all = [current, ...older];
  const fingerprintKey = derivedKey(secret, 'settle vault fingerprint');
  return {
    keyId: current.id,
    previousKeyIds: older.map((k) => k.id),
    encrypt(plain) {
      const iv = pooledRandomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', current.encryption, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return ['v2', current.id, iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join('.');
    },
    decrypt(sealed) {
      const parts = sealed.split('.');
      if (parts[0] === 'v2') {
        const key = all.find((k) => k.id === parts[1]);
        if (!key) throw new Error(`sealed under vault key ${parts[1]}, which this process does not have (SETTLE_VAULT_KEY / SETTLE_VAULT_PREVIOUS_KEYS)`);
        return open(key.encryption, parts[2], parts[3], parts[4]);
      }
      let failure: unknown;
      for (const key of all) {
        try {
          return open(key.encryption, parts[1], parts[2], parts[3]);
        } catch (error) {
          failure = error;
        }
      }
      throw failure;
    },
    fingerprint(plain) {
      return createHmac('sha256', fingerprintKey).update(plain).digest('hex');
    },
    sealedWithCurrent(sealed) {
      return sealed.startsWith(`v2.${current.id}.`);
    },
  };
}
