/** The domain's seams, built once per process from config: clock, vault, processor, timing. */
import type { Config } from './config.ts';
import type { DomainServices, PaymentProcessor } from './engine/family.ts';
import { sandboxProcessor } from './families/transactions/sandbox.ts';
import { createVault, loadVaultSecret } from './vault.ts';

export function createDomainServices(
  config: Config,
  now: () => Date = () => new Date(),
  processor: PaymentProcessor = sandboxProcessor,
): DomainServices {
  const vault = createVault(loadVaultSecret(config.vaultKey, config.dataDir));
  return { now, vault, processor, authorizationWindowMs: config.authorizationWindowMs, processingDelayMs: config.processingDelayMs };
}
