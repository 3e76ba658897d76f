/** The domain's seams, built once per process from config: clock, vault, timing. */
import type { Config } from './config.ts';
import type { DomainServices } from './engine/family.ts';
import { createVault, loadVaultSecret } from './vault.ts';

export function createDomainServices(config: Config, now: () => Date = () => new Date()): DomainServices {
  const vault = createVault(loadVaultSecret(config.vaultKey, config.dataDir));
  return { now, vault, authorizationWindowMs: config.authorizationWindowMs, processingDelayMs: config.processingDelayMs };
}
