/**
 * A transaction's funding steps, written by its own family (CONTRACT §14): the funding run's
 * claim of due transactions (funding_status pending or held → funded or held), a release's payout
 * of held ones, and each step's operation row with its events (`clear`, `fund`, `chargeback`).
 * With the family's update (a status change records its step in afterWrite), these are the only
 * writers of a transaction's funding_status and of operation rows: the funding family asks here.
 * A run claims its items in one statement (`for update skip locked`), so a run over many
 * transactions stays one write, not one update each.
 */
import type { Db } from '../../db/connection.ts';
import type { Tenant } from '../../engine/family.ts';
import { fundingOperation } from '../transaction_operations/operations.ts';
import { recordOperations } from '../transaction_operations/repository.ts';
import { markFunded, settleDueItems, type FundingItem, type SettleSpec } from './fundingRepository.ts';

export type { FundingItem, SettleSpec };

export interface FundingStep {
  id: string;
  /** minor units */
  amount: number;
  depositId?: string;
  /** the operations of this transaction, in order */
  steps: Array<'clear' | 'fund' | 'chargeback'>;
}

/** Claims an account's due transactions for a run (see settleDueItems), locked until the run commits. */
export function claimDueForFunding(tx: Db, tenant: Tenant, spec: SettleSpec): Promise<FundingItem[]> {
  return settleDueItems(tx, tenant, spec);
}

/** Held transactions a release pays out, now funded. */
export function fundHeld(tx: Db, ids: string[]): Promise<void> {
  return markFunded(tx, ids);
}

/** One operation row per transaction and step, each with its events, in one statement. */
export async function recordFundingSteps(tx: Db, tenant: Tenant, items: FundingStep[]): Promise<void> {
  await recordOperations(tx, tenant, items.flatMap((item) => item.steps.map((step) => fundingOperation(step, item.id, item.amount, item.depositId))));
}
