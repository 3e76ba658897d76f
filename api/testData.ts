/**
 * Resetting a test environment (`DELETE /test_data`): every object of the environment, and what
 * they left behind (ledger, operations, events, deliveries and logs, e-mails, idempotency records,
 * client tokens, the test clock, queued jobs), deleted in one database transaction; the
 * environment then starts again as a new org's does, with one active processing account, its
 * default (CONTRACT §3). The org's API keys and webhooks stay.
 *
 * The reset holds the tenant's locks (api/db/tenantLocks.ts) from before its first delete to its
 * commit, and every request of the environment runs under a share of them (api/tenantGate.ts),
 * so a request either finished before the reset started deleting or starts after it committed.
 */
import type { Db } from './db/connection.ts';
import { lockTenantForReset } from './db/tenantLocks.ts';
import { deleteTenantRows, type ResetCounts } from './db/testData.ts';
import type { DomainServices, Principal, Tenant } from './engine/family.ts';
import { conflict, forbidden } from './errors.ts';
import { openDefaultProcessingAccount } from './families/accounts/defaultAccount.ts';

/** How long a reset waits for the environment's running requests (and any row lock) before it gives up. */
export const RESET_LOCK_TIMEOUT_MS = 30_000;

export interface TestDataReset {
  object: 'test_data_reset';
  /** rows deleted, by collection; the new default processing account is not among them */
  deleted: ResetCounts;
  default_processing_account_id: string;
}

/** `principal` and `domain`: the request's, for the rules that make the new default account. */
export async function resetTestData(db: Db, tenant: Tenant, orgName: string, principal: Principal, domain: DomainServices): Promise<TestDataReset> {
  if (tenant.environment !== 'test') throw forbidden('Only a test environment can be reset');
  try {
    return await db.transaction(async (tx) => {
      await lockTenantForReset(tx, tenant, RESET_LOCK_TIMEOUT_MS);
      const deleted = await deleteTenantRows(tx, tenant);
      const account = await openDefaultProcessingAccount({ tx, tenant, version: 'v1', principal, domain }, orgName);
      return { object: 'test_data_reset' as const, deleted, default_processing_account_id: account.id };
    });
  } catch (error) {
    if ((error as { code?: unknown }).code === '55P03') {
      throw conflict(`Requests of this test environment were still running after ${RESET_LOCK_TIMEOUT_MS / 1000} s; nothing was deleted, retry the reset`);
    }
    throw error;
  }
}
