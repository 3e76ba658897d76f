/** The domain's services, built once per process from config and the process's seams: clock, vault, processor, timing. */
import type { Config } from './config.ts';
import type { DomainServices } from './engine/family.ts';
import { withDefaults, type Seams } from './seams.ts';
import { createVault, loadVaultSecret } from './vault.ts';

export function createDomainServices(config: Config, seams: Partial<Seams> = {}): DomainServices {
  const { clock, processor } = withDefaults(seams);
  const vault = createVault(loadVaultSecret(config.vaultKey, config.dataDir));
  return { now: clock, vault, processor, authorizationWindowMs: config.authorizationWindowMs, processingDelayMs: config.processingDelayMs };
}
