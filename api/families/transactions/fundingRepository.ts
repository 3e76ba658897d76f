/**
 * Funding SQL of the transaction table: the rows a funding step changes, locked and read for the
 * family's update (./funding.ts), which writes each change with its audit event. Called by the
 * family's funding steps only.
 */
import { rows, type Db } from '../../db/connection.ts';
import { tenantScan } from '../../db/tenant.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';

export interface SettleSpec {
  accountId: string;
  /** funding date (YYYY-MM-DD) up to which pending items are due */
  dueBy: string;
  to: 'funded' | 'held';
  /** items already held are settled too */
  includeHeld: boolean;
  /** only these transactions (instant funding) */
  only?: string[];
}

const ROW = 't.id, t.type, t.data, t.created_at, t.modified_at';

/**
 * Locks and reads an account's due transactions, in id order; the row locks make a second,
 * concurrent run find nothing once this one has changed them. A row a request holds (a refund of
 * it, a void) is skipped, not waited for: it is funded by the next run, and a request that locks
 * that row before the account cannot deadlock with the run.
 */
export function lockDueItems(db: Db, tenant: Tenant, spec: SettleSpec): Promise<StoredObject[]> {
  const scope = tenantScan(tenant, 't');
  const only = spec.only ? ' and t.id = any(?::text[])' : '';
  return rows<StoredObject>(db,
    `select ${ROW} from transactions t
      where ${scope.sql} and t.data->>'processing_id' = ? and t.data->>'funding_status' in ('pending', 'held')
        and ((t.data->>'funding_status' = 'pending' and t.data->>'funding_date' <= ?) or (? and t.data->>'funding_status' = 'held'))${only}
      order by t.id for update of t skip locked`,
    [...scope.bindings, spec.accountId, spec.dueBy, spec.includeHeld, ...(spec.only ? [spec.only] : [])]);
}

/** Locks and reads the tenant's transactions of `ids`, in id order. */
export function lockTransactions(db: Db, tenant: Tenant, ids: string[]): Promise<StoredObject[]> {
  const scope = tenantScan(tenant, 't');
  return rows<StoredObject>(db, `select ${ROW} from transactions t where ${scope.sql} and t.id = any(?::text[]) order by t.id for update of t`, [...scope.bindings, ids]);
}

/** Locks and reads the funded transactions a deposit paid out (its `deposit` transfer rows), in id order. */
export function lockFundedBy(db: Db, tenant: Tenant, depositId: string): Promise<StoredObject[]> {
  const scope = tenantScan(tenant, 't');
  return rows<StoredObject>(db,
    `select ${ROW} from transfers f join transactions t on t.id = f.assoc_transaction_id
      where f.transaction_id = ? and f.entry_type = 'deposit' and ${scope.sql} and t.data->>'funding_status' = 'funded'
      order by t.id for update of t`,
    [depositId, ...scope.bindings]);
}
