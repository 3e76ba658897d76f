/** Keys as `settle keys create` makes them: a new org is opened with its default processing account by the account family's create. */
import { loadConfig } from '../../api/config.ts';
import type { Db } from '../../api/db/connection.ts';
import { createDomainServices } from '../../api/domain.ts';
import { createKey, type CreatedKey, type Environment, type KeySettings } from '../../api/keys.ts';

let domain: ReturnType<typeof createDomainServices> | null = null;

export function createTestKey(db: Db, org: string, environment: Environment, settings: KeySettings = {}, scopes: string[] | null = null): Promise<CreatedKey> {
  domain ??= createDomainServices(loadConfig());
  return createKey(db, domain, org, environment, settings, scopes);
}
