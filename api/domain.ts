/** The domain's services, built once per process from config and the process's seams: clock, vault, processor, timing. */
import type { Config } from './config.ts';
import type { DomainServices } from './engine/family.ts';
import { withDefaults, type Seams } from './seams.ts';
import { createVault, loadVaultSecret, type Vault } from './vault.ts';

/** `vault`: the one a process opened against its database (api/vaultKeys.ts); tools without one load the configured key. */
export function createDomainServices(config: Config, seams: Partial<Seams> = {}, vault?: Vault): DomainServices {
  const { clock, processor } = withDefaults(seams);
  vault ??= createVault(loadVaultSecret(config.vaultKey, config.dataDir));
  return { now: clock, vault, processor, authorizationWindowMs: config.authorizationWindowMs, processingDelayMs: config.processingDelayMs };
}
