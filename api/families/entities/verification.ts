/**
 * Sandbox verification (CONTRACT §13). Attaching an entity to an account starts it: the entity
 * goes `unverified → pending` and a `verify_entity` job is enqueued in the same transaction. The
 * worker settles it once the verification delay has passed: `verified`, or `rejected` when the
 * tax id ends in 0000; then the accounts the entity backs follow
 * (api/families/accounts/verificationOutcome.ts). Each step is a change through the entity
 * family's update, whose events rule emits `entity:status`.
 */
import type { Db } from '../../db/connection.ts';
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { updateNested } from '../../engine/operations.ts';
import { entities } from './family.ts';
import { findEntity, scheduleJob } from './repository.ts';

export const VERIFY_TASK = 'verify_entity';

export interface VerificationJob {
  entity_id: string;
  org_id: string;
  environment: 'test' | 'live';
}

const jobKey = (entityId: string) => `${VERIFY_TASK}:${entityId}`;

/**
 * In the caller's transaction: the entity becomes pending (if it never was) and its job is
 * enqueued. False when the entity is gone (deleted by a request that committed first).
 */
export async function startVerification(ctx: RuleContext, entityId: string): Promise<boolean> {
  const { tx, tenant } = ctx;
  const entity = await findEntity(tx, tenant, entityId, { forUpdate: true });
  if (!entity) return false;
  const now = ctx.domain.now();
  if ((entity.data.verification_status ?? 'unverified') === 'unverified') {
    await updateNested(ctx, entities, entity, {}, new Map([['verification_status', 'pending'], ['verification_requested_at', now.toISOString()]]));
  }
  // Already decided: the job only brings the newly attached accounts in line.
  const job: VerificationJob = { entity_id: entity.id, org_id: tenant.orgId, environment: tenant.environment };
  await scheduleJob(tx, VERIFY_TASK, { ...job }, now, jobKey(entity.id));
  return true;
}

/** The sandbox's decision: a tax id ending in 0000 is refused. */
function decide(entity: StoredObject): 'verified' | 'rejected' {
  const taxId = (entity.data.tax_id as { value?: unknown } | undefined)?.value;
  return typeof taxId === 'string' && taxId.endsWith('0000') ? 'rejected' : 'verified';
}

/** What the processing accounts an entity backs become once it is settled. */
export type AccountOutcome = 'active' | 'denied';

/**
 * The entity's part of the worker step, in the caller's transaction: `{ due }` when the delay has
 * not passed yet, else the outcome its accounts follow (null when the entity is gone or not
 * settled). Idempotent: a settled entity only answers its outcome again.
 */
export async function settleEntity(ctx: RuleContext, entityId: string, now: Date, delayMs: number): Promise<{ due: Date } | AccountOutcome | null> {
  const entity = await findEntity(ctx.tx, ctx.tenant, entityId, { forUpdate: true });
  if (!entity) return null;
  let status = String(entity.data.verification_status);
  if (status === 'pending') {
    const due = new Date(Date.parse(String(entity.data.verification_requested_at ?? now.toISOString())) + delayMs);
    if (due > now) return { due };
    const decided = decide(entity);
    await updateNested(ctx, entities, entity, {}, new Map([['verification_status', decided]]));
    status = decided;
  }
  if (status === 'verified') return 'active';
  return status === 'rejected' ? 'denied' : null;
}

export async function retryVerificationAt(db: Db, job: VerificationJob, at: Date): Promise<void> {
  await scheduleJob(db, VERIFY_TASK, { ...job }, at, jobKey(job.entity_id));
}
