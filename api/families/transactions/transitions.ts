/**
 * Status changes the system makes on its own (completion, bank rejection, authorization expiry),
 * each a change of the transaction through its family's update (api/engine/operations.ts:
 * updateNested) with the actor of the work under way (a worker job: `system`): the family's rules
 * decide the status code, the operation and the events, and the door's one statement writes the
 * row with its audit event. Each locks the row and re-checks the status it expects in the same
 * database transaction, so a racing capture or void either wins or loses, never both.
 */
import type { Db } from '../../db/connection.ts';
import type { DomainServices, Principal, RuleContext } from '../../engine/family.ts';
import { updateNested } from '../../engine/operations.ts';
import { transactions } from './family.ts';
import { SYSTEM_TRANSITION } from './lifecycle.ts';
import { lockTransactionById } from './repository.ts';

export interface SystemTransition {
  transactionId: string;
  /** statuses the change applies from; anything else means a client got there first */
  from: string[];
  to: string;
  /** status_code to record, e.g. authorization_expired */
  reason?: string;
}

/** Whom the family's rules see making the change (the audit's actor is the job's own). */
const SYSTEM_PRINCIPAL: Principal = { kind: 'secret', keyId: 'system', settings: {} };

/** Returns the new status, or null when the transaction had moved on (or is gone). */
export async function transitionTransaction(db: Db, domain: DomainServices, change: SystemTransition): Promise<string | null> {
  return db.transaction(async (tx) => {
    const locked = await lockTransactionById(tx, change.transactionId);
    if (!locked || !change.from.includes(String(locked.data.status))) return null;
    const { org_id: orgId, environment, ...previous } = locked;
    const ctx: RuleContext = { tx, tenant: { orgId, environment }, version: 'v1', principal: SYSTEM_PRINCIPAL, domain };
    await updateNested(ctx, transactions, previous, {}, new Map<string, unknown>([['status', change.to], [SYSTEM_TRANSITION, change.reason ?? null]]));
    return change.to;
  });
}
