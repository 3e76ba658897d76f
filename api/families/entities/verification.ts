/**
 * Sandbox verification (CONTRACT §13). Attaching an entity to an account starts it: the entity
 * goes `unverified → pending` and a `verify_entity` job is enqueued in the same transaction. The
 * worker settles it once the verification delay has passed: `verified`, or `rejected` when the
 * tax id ends in 0000; then every pending processing account the entity backs becomes `active`
 * (or `denied`). Each change writes its event (`entity:status`, `processing_status`) with it.
 */
import type { Db } from '../../db/connection.ts';
import { recordEvents, type EventDraft, type Trigger } from '../../db/events.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';
import { findEntity, scheduleJob } from './repository.ts';
import { lockPendingProcessingAccounts, writeAccountData, writeEntityData } from './verificationRepository.ts';
import { PROCESSING_STATUS_TRIGGER } from '../accounts/triggers.ts';
import { ENTITY_STATUS_TRIGGER } from './triggers.ts';

export const VERIFY_TASK = 'verify_entity';

export interface VerificationJob {
  entity_id: string;
  org_id: string;
  environment: 'test' | 'live';
}

const jobKey = (entityId: string) => `${VERIFY_TASK}:${entityId}`;

function statusEvent(trigger: Trigger, objectType: string, id: string, status: string, previous: unknown): EventDraft {
  return { trigger, objectType, objectId: id, value: { status, previous_status: previous ?? null } };
}

/**
 * In the caller's transaction: the entity becomes pending (if it never was) and its job is
 * enqueued. False when the entity is gone (deleted by a request that committed first).
 */
export async function startVerification(tx: Db, tenant: Tenant, entityId: string, now: Date): Promise<boolean> {
  const entity = await findEntity(tx, tenant, entityId, { forUpdate: true });
  if (!entity) return false;
  const status = entity.data.verification_status ?? 'unverified';
  if (status === 'unverified') {
    await writeEntityData(tx, tenant, entity.id, { ...entity.data, verification_status: 'pending', verification_requested_at: now.toISOString() });
    await recordEvents(tx, tenant, [statusEvent(ENTITY_STATUS_TRIGGER, 'entity', entity.id, 'pending', status)]);
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

/**
 * Worker step, one transaction. Returns when to look again if the delay has not passed yet.
 * Idempotent: a settled entity only moves accounts still pending.
 */
export async function settleVerification(db: Db, job: VerificationJob, now: Date, delayMs: number): Promise<Date | null> {
  const tenant: Tenant = { orgId: job.org_id, environment: job.environment };
  return db.transaction(async (tx) => {
    const entity = await findEntity(tx, tenant, job.entity_id, { forUpdate: true });
    if (!entity) return null;
    let status = String(entity.data.verification_status);
    if (status === 'pending') {
      const due = new Date(Date.parse(String(entity.data.verification_requested_at ?? now.toISOString())) + delayMs);
      if (due > now) return due;
      const decided = decide(entity);
      await writeEntityData(tx, tenant, entity.id, { ...entity.data, verification_status: decided });
      await recordEvents(tx, tenant, [statusEvent(ENTITY_STATUS_TRIGGER, 'entity', entity.id, decided, status)]);
      status = decided;
    }
    if (status === 'verified' || status === 'rejected') await settleAccounts(tx, tenant, entity.id, status === 'verified' ? 'active' : 'denied');
    return null;
  });
}

async function settleAccounts(tx: Db, tenant: Tenant, entityId: string, to: string): Promise<void> {
  const pending = await lockPendingProcessingAccounts(tx, tenant, entityId);
  for (const account of pending) {
    const processing = { ...(account.data.processing as Record<string, unknown>), status: to };
    await writeAccountData(tx, tenant, account.id, { ...account.data, processing });
  }
  await recordEvents(tx, tenant, pending.map((a) => statusEvent(PROCESSING_STATUS_TRIGGER, 'processing_account', a.id, to, 'pending')));
}

export async function retryVerificationAt(db: Db, job: VerificationJob, at: Date): Promise<void> {
  await scheduleJob(db, VERIFY_TASK, { ...job }, at, jobKey(job.entity_id));
}
