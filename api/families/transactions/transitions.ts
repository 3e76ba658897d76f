/**
 * Status changes the system makes on its own (completion, bank rejection, authorization expiry).
 * Each locks the row, re-checks the status it expects and writes the change with its events in
 * one database transaction, so a racing capture or void either wins or loses, never both.
 */
import { rows, type Db } from '../../db/connection.ts';
import { recordEvents } from '../../db/events.ts';
import type { StoredObject } from '../../engine/family.ts';
import { statusCodeFor, transitionEvents } from './lifecycle.ts';
import { STORED_ROW } from '../../db/storedRow.ts';

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
    const found = await rows<StoredObject & { org_id: string; environment: string }>(tx,
      `select ${STORED_ROW}, org_id, environment from transactions where id = ? for update`,
      [change.transactionId]);
    const previous = found[0];
    if (!previous || !change.from.includes(String(previous.data.status))) return null;
    const data = { ...previous.data, status: change.to, ...statusCodeFor(change.to, change.reason) };
    await rows(tx, 'update transactions set data = ?::jsonb, modified_at = now() where id = ?', [JSON.stringify(data), previous.id]);
    const next = { ...previous, data };
    await recordEvents(tx, { orgId: previous.org_id, environment: previous.environment }, transitionEvents(next, previous));
    return change.to;
  });
}
