/**
 * Status changes the system makes on its own (completion, bank rejection, authorization expiry).
 * Each locks the row, re-checks the status it expects and writes the change with its events in
 * one database transaction, so a racing capture or void either wins or loses, never both.
 */
import type { Db } from '../../db/connection.ts';
import { statusOperation } from '../transaction_operations/operations.ts';
import { recordOperations } from '../transaction_operations/repository.ts';
import { statusCodeFor, transitionEvents } from './lifecycle.ts';
import { lockTransactionById, storeTransactionData } from './repository.ts';

export interface SystemTransition {
  transactionId: string;
  /** statuses the change applies from; anything else means a client got there first */
  from: string[];
  to: string;
  /** status_code to record, e.g. authorization_expired */
  reason?: string;
}

/** Returns the new status, or null when the transaction had moved on (or is gone). */
export async function transitionTransaction(db: Db, change: SystemTransition): Promise<string | null> {
  return db.transaction(async (tx) => {
    const previous = await lockTransactionById(tx, change.transactionId);
    if (!previous || !change.from.includes(String(previous.data.status))) return null;
    const data = { ...previous.data, status: change.to, ...statusCodeFor(change.to, change.reason) };
    await storeTransactionData(tx, previous.id, data);
    const next = { ...previous, data };
    const step = statusOperation(next, previous);
    await recordOperations(tx, { orgId: previous.org_id, environment: previous.environment }, step ? [step] : [], transitionEvents(next, previous));
    return change.to;
  });
}
