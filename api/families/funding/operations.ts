/** The funding steps of transactions (`clear`, `fund`, `chargeback`) as operation rows with their events. */
import type { Db } from '../../db/connection.ts';
import type { Tenant } from '../../engine/family.ts';
import { fundingOperation } from '../transaction_operations/operations.ts';
import { recordOperations } from '../transaction_operations/repository.ts';

export interface OperationItem {
  id: string;
  /** minor units */
  amount: number;
  depositId?: string;
  /** the operations of this transaction, in order */
  steps: Array<'clear' | 'fund' | 'chargeback'>;
}

/** One operation row per transaction and step, each with its events, in one statement. */
export async function recordFundingOperations(db: Db, tenant: Tenant, items: OperationItem[]): Promise<void> {
  await recordOperations(db, tenant, items.flatMap((item) => item.steps.map((step) => fundingOperation(step, item.id, item.amount, item.depositId))));
}
