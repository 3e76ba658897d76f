/** Keys for a bench's orgs, made as `settle keys create` makes them: a new org opens with its default processing account. */
import { loadConfig } from '../api/config.ts';
import type { Db } from '../api/db/connection.ts';
import { createDomainServices } from '../api/domain.ts';
import { createKey, type CreatedKey } from '../api/keys.ts';

export function benchKey(db: Db, org: string): Promise<CreatedKey> {
  return createKey(db, createDomainServices(loadConfig()), org, 'test');
}
