/** Sandbox entity verification, a verification delay after the entity was attached (api/families/entities/verification.ts). */
import type { Task } from 'graphile-worker';
import type { Db } from '../../api/db/connection.ts';
import type { DomainServices } from '../../api/engine/family.ts';
import { settleVerification } from '../../api/families/accounts/verificationOutcome.ts';
import { retryVerificationAt, type VerificationJob } from '../../api/families/entities/verification.ts';

function jobOf(payload: unknown): VerificationJob {
  const job = payload as Partial<VerificationJob>;
  if (typeof job.entity_id !== 'string' || typeof job.org_id !== 'string' || (job.environment !== 'test' && job.environment !== 'live')) {
    throw new Error('verify_entity needs entity_id, org_id and environment');
  }
  return job as VerificationJob;
}

/** Settles a pending entity once its delay has passed (looking again then if it has not) and its accounts with it. */
export function verifyEntity(db: Db, domain: DomainServices, delayMs: number): Task {
  return async (payload) => {
    const job = jobOf(payload);
    const again = await settleVerification(db, domain, job, delayMs);
    if (again) await retryVerificationAt(db, job, again);
  };
}
