/** SQL of sandbox disputes beyond the transactions repository: the disputed row and earlier disputes. */
import { rows, type Db } from '../../db/connection.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import type { StoredObject } from '../../engine/family.ts';

/** A transaction with its tenant: a dispute job carries only the id. */
export type LocatedTransaction = StoredObject & { org_id: string; environment: 'test' | 'live' };

/** The transaction with this id, whichever tenant it belongs to, locked for the rest of the transaction. */
export async function lockTransactionById(tx: Db, id: string): Promise<LocatedTransaction | null> {
  const [found] = await rows<LocatedTransaction>(tx, `select ${STORED_ROW}, org_id, environment from transactions where id = ? for update`, [id]);
  return found ?? null;
}

/** Whether a transfer row of `entryType` already links a transaction to `assocId`. */
export async function hasLinkedTransfer(tx: Db, assocId: string, entryType: string): Promise<boolean> {
  const found = await rows(tx, 'select 1 from transfers where assoc_transaction_id = ? and entry_type = ? limit 1', [assocId, entryType]);
  return found.length > 0;
}
