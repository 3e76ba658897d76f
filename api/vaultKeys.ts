/**
 * Which vault key a process may use against a database, and rotating to a new one.
 *
 * The database records the id of the key its sealed values use. A process starts only if its
 * SETTLE_VAULT_KEY is that key, or if one of its SETTLE_VAULT_PREVIOUS_KEYS is (a rotation is
 * beginning: its key is recorded as the next one). A key is generated only for a database that
 * records none yet, and the process says so loudly: a second machine without the key refuses to
 * start instead of sealing with a key of its own.
 */
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Db } from './db/connection.ts';
import { promoteNextVaultKey, recordedVaultKeys, recordVaultKey, replaceSealedValue, rowsWithSealedValues, SEALED_COLUMNS } from './db/vaultKeys.ts';
import { createVault, generateVaultSecret, parseVaultKey, readVaultSecret, SEALED, vaultKeyFile, type Vault } from './vault.ts';

/** A refusal to start, said in one line. */
export class VaultKeyRefused extends Error {
  override name = 'VaultKeyRefused';
}

function previousKeys(config: Config): Buffer[] {
  return config.vaultPreviousKeys.map((text) => parseVaultKey(text, 'SETTLE_VAULT_PREVIOUS_KEYS'));
}

/** The process's vault, checked against the key the database records (and recording it when none is). */
export async function openVault(config: Config, db: Db, log: Logger): Promise<Vault> {
  // The database first, then the key file: a process on this machine that generates the key writes
  // the file before it records the key, so a key recorded here is always one whose file we can read.
  let recorded = await recordedVaultKeys(db);
  let active = recorded.find((k) => k.state === 'active');
  let secret = readVaultSecret(config.vaultKey, config.dataDir);
  if (!secret) {
    if (active) {
      throw new VaultKeyRefused(`SETTLE_VAULT_KEY is not set, and this database's sealed data uses vault key ${active.id}: set SETTLE_VAULT_KEY to that key (copy it from the machine that has it; see "The vault key" in the README)`);
    }
    secret = generateVaultSecret(config.dataDir);
    log.warn({ file: vaultKeyFile(config.dataDir) }, 'generated a new vault key for this new database: back it up, and give it to every other machine as SETTLE_VAULT_KEY');
  }
  const vault = createVault(secret, previousKeys(config));
  if (!active) {
    await recordVaultKey(db, vault.keyId, 'active');
    recorded = await recordedVaultKeys(db);
    active = recorded.find((k) => k.state === 'active');
  }
  if (active?.id === vault.keyId) return vault;
  if (active && vault.previousKeyIds.includes(active.id)) {
    const next = recorded.find((k) => k.state === 'next');
    if (next && next.id !== vault.keyId) throw new VaultKeyRefused(`SETTLE_VAULT_KEY is vault key ${vault.keyId}, but a rotation to vault key ${next.id} is under way: use that key`);
    if (!next) await recordVaultKey(db, vault.keyId, 'next');
    return vault;
  }
  throw new VaultKeyRefused(`SETTLE_VAULT_KEY (vault key ${vault.keyId}) is not the key this database's sealed data uses (vault key ${active?.id}): set SETTLE_VAULT_KEY to that key on every machine (see "The vault key" in the README)`);
}

export interface RotationProgress {
  /** values re-sealed in this run */
  resealed: number;
  /** values left as they were: already under the current key */
  current: number;
  /** rows a concurrent change took first (read again on the next pass) */
  contended: number;
  finished: boolean;
}

/** The keys under which the vault's values are stored: `sealed_number`, `sealed`, `<name>_sealed`. */
function holdsSealed(key: string): boolean {
  return key === 'sealed' || key === 'sealed_number' || key.endsWith('_sealed');
}

/** Re-seals one json document's sealed values under the current key; fingerprints follow the numbers. */
function reseal(vault: Vault, value: unknown, counts: RotationProgress): unknown {
  if (Array.isArray(value)) return value.map((item) => reseal(vault, item, counts));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item === 'string' && holdsSealed(key) && SEALED.test(item)) {
      if (vault.sealedWithCurrent(item)) counts.current++;
      else counts.resealed++;
      out[key] = vault.sealedWithCurrent(item) ? item : vault.encrypt(vault.decrypt(item));
    } else {
      out[key] = reseal(vault, item, counts);
    }
  }
  // A payment method's fingerprint is keyed by the vault secret too: computed again from the number.
  const section = out as { sealed_number?: unknown; fingerprint?: unknown; routing_number?: unknown };
  if (typeof section.sealed_number === 'string' && typeof section.fingerprint === 'string') {
    const number = vault.decrypt(section.sealed_number);
    section.fingerprint = vault.fingerprint(typeof section.routing_number === 'string' ? `${section.routing_number}:${number}` : number);
  }
  return out;
}

export interface RotateOptions {
  batchSize?: number;
  /** stop after this many batches (a run that is cut short, like a crash, is resumed by running again) */
  maxBatches?: number;
  onBatch?: (progress: RotationProgress) => void;
}

/**
 * Re-seals every sealed value under the process's current key, online: each row is rewritten only
 * if unchanged since it was read, values already under the current key are skipped (so a run cut
 * short resumes where it was), and the previous key stays accepted until the last pass finds
 * nothing left; then the new key becomes the active one.
 */
export async function rotateVault(db: Db, vault: Vault, options: RotateOptions = {}): Promise<RotationProgress> {
  const recorded = await recordedVaultKeys(db);
  const active = recorded.find((k) => k.state === 'active');
  if (active?.id === vault.keyId) return { resealed: 0, current: 0, contended: 0, finished: true };
  const next = recorded.find((k) => k.state === 'next');
  if (next?.id !== vault.keyId) throw new VaultKeyRefused(`a rotation needs SETTLE_VAULT_KEY set to the new key and SETTLE_VAULT_PREVIOUS_KEYS to the old one (vault key ${active?.id}), and the web and worker processes restarted with both`);
  const batchSize = options.batchSize ?? 500;
  let batches = 0;
  const total: RotationProgress = { resealed: 0, current: 0, contended: 0, finished: false };
  for (;;) {
    const pass: RotationProgress = { resealed: 0, current: 0, contended: 0, finished: false };
    for (const source of SEALED_COLUMNS) {
      let after: string[] | null = null;
      for (;;) {
        if (options.maxBatches !== undefined && batches >= options.maxBatches) return total;
        const found = await rowsWithSealedValues(db, source, after, batchSize);
        if (found.length === 0) break;
        batches++;
        for (const row of found) {
          const counts: RotationProgress = { resealed: 0, current: 0, contended: 0, finished: false };
          const value = reseal(vault, row.value, counts);
          pass.current += counts.current;
          if (counts.resealed === 0) continue;
          if (await replaceSealedValue(db, source, row.key, row.value, value)) pass.resealed += counts.resealed;
          else pass.contended++;
        }
        after = found[found.length - 1].key;
        options.onBatch?.({ ...total, resealed: total.resealed + pass.resealed, contended: total.contended + pass.contended });
      }
    }
    total.resealed += pass.resealed;
    total.current = pass.current;
    total.contended += pass.contended;
    if (pass.resealed === 0 && pass.contended === 0) break;
  }
  await promoteNextVaultKey(db, vault.keyId);
  total.finished = true;
  return total;
}
