/**
 * The worker step of sandbox entity verification (CONTRACT §13), one database transaction: the
 * entity is settled (api/families/entities/verification.ts), then every pending processing
 * account it backs becomes `active` (or `denied`) through the account family's update, so its
 * rules, its audit event and its `processing_status` event are those of any change of status.
 */
import type { Db } from '../../db/connection.ts';
import type { DomainServices, RuleContext, Tenant } from '../../engine/family.ts';
import { updateNested } from '../../engine/operations.ts';
import { settleEntity, type VerificationJob } from '../entities/verification.ts';
import { accounts } from './family.ts';
import { lockPendingProcessingAccounts } from './repository.ts';

/** Returns when to look again if the entity's delay has not passed yet. */
export async function settleVerification(db: Db, domain: DomainServices, job: VerificationJob, delayMs: number): Promise<Date | null> {
  const tenant: Tenant = { orgId: job.org_id, environment: job.environment };
  return db.transaction(async (tx) => {
    const ctx: RuleContext = { tx, tenant, version: 'v1', domain, principal: { kind: 'secret', keyId: 'verify_entity', settings: {} } };
    const outcome = await settleEntity(ctx, job.entity_id, domain.now(), delayMs);
    if (outcome === null) return null;
    if (typeof outcome === 'object') return outcome.due;
    for (const account of await lockPendingProcessingAccounts(tx, tenant, job.entity_id)) {
      await updateNested(ctx, accounts, account, { status: outcome });
    }
    return null;
  });
}
