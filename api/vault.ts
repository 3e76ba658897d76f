/**
 * Card and account numbers at rest: AES-256-GCM with a key from SETTLE_VAULT_KEY (base64, 32
 * bytes) or, when absent, one generated into the data directory on first use. Fingerprints are
 * HMAC-SHA256 under a key derived from the same secret, so equal numbers match without decrypting.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export interface Vault {
  encrypt: (plain: string) => string;
  decrypt: (sealed: string) => string;
  fingerprint: (plain: string) => string;
}

export function loadVaultSecret(given: string | undefined, dataDir: string): Buffer {
  if (given) {
    const key = Buffer.from(given, 'base64');
    if (key.length !== 32) throw new Error('SETTLE_VAULT_KEY must be 32 bytes, base64-encoded');
    return key;
  }
  const file = path.join(dataDir, 'vault.key');
  fs.mkdirSync(dataDir, { recursive: true });
  try {
    // 'wx' fails if another process wrote it first; then both use that one.
    fs.writeFileSync(file, randomBytes(32).toString('base64') + '\n', { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as { code?: string }).code !== 'EEXIST') throw error;
  }
  return Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
}

export function createVault(secret: Buffer): Vault {
  const encryptionKey = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'settle vault encryption', 32));
  const fingerprintKey = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'settle vault fingerprint', 32));
  return {
    encrypt(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', encryptionKey, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join('.');
    },
    decrypt(sealed) {
      const [, iv, tag, body] = sealed.split('.');
      const decipher = createDecipheriv('aes-256-gcm', encryptionKey, Buffer.from(iv, 'base64'));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
    },
    fingerprint(plain) {
      return createHmac('sha256', fingerprintKey).update(plain).digest('hex');
    },
  };
}
