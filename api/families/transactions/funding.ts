/**
 * A transaction's funding steps, written by its own family (CONTRACT §14): the funding run's
 * claim of due transactions (funding_status pending or held → funded or held), a release's payout
 * of held ones, a refused deposit's return of what it paid out to held, and each step's operation
 * row with its events (`clear`, `fund`, `chargeback`). Each funding_status change is a change of
 * the transaction through the family's update (`updateNestedAll`, the family's prepareFundingStep),
 * with the actor of the work under way: the door's one statement per batch writes the rows with an
 * audit event each, so a run over many transactions stays a few statements, not one update each.
 * With the family's update (a status change records its step in afterWrite), these are the only
 * writers of a transaction's funding_status and of operation rows: the funding family asks here.
 */
import type { Db } from '../../db/connection.ts';
import type { RuleContext, StoredObject, Tenant } from '../../engine/family.ts';
import { updateNestedAll } from '../../engine/operations.ts';
import { fundingOperation } from '../transaction_operations/operations.ts';
import { recordOperations } from '../transaction_operations/repository.ts';
import { lockDueItems, lockFundedBy, lockTransactions, type SettleSpec } from './fundingRepository.ts';
import { transactionFamily } from './declared.ts';
import { FUNDING_STEP } from './lifecycle.ts';

export type { SettleSpec };

export interface FundingItem {
  id: string;
  type: string;
  /** funding status before this change */
  was: 'pending' | 'held';
  amount: number;
  fee: number;
}

export interface FundingStep {
  id: string;
  /** minor units */
  amount: number;
  depositId?: string;
  /** the operations of this transaction, in order */
  steps: Array<'clear' | 'fund' | 'chargeback'>;
}

/** Changes each row's funding_status to `to` through the family's update, each audited with the work's actor. */
async function moveFunding(ctx: RuleContext, rows: StoredObject[], to: 'funded' | 'held'): Promise<StoredObject[]> {
  return updateNestedAll(ctx, transactionFamily(), rows, new Map<string, unknown>([['funding_status', to], [FUNDING_STEP, true]]));
}

function fundingItemOf(row: StoredObject): FundingItem {
  return { id: row.id, type: row.type, was: row.data.funding_status as FundingItem['was'], amount: Number(row.data.amount), fee: Number(row.data.fee ?? 0) };
}

/**
 * Claims an account's due transactions for a run (lockDueItems: a row a request holds is skipped)
 * and moves them to `spec.to`, locked until the run commits; answers them as they were, in id order
 * (by code unit, as the run lists them).
 */
export async function claimDueForFunding(ctx: RuleContext, spec: SettleSpec): Promise<FundingItem[]> {
  const due = await lockDueItems(ctx.tx, ctx.tenant, spec);
  await moveFunding(ctx, due, spec.to);
  return due.map(fundingItemOf).sort((a, b) => (a.id < b.id ? -1 : 1));
}

/** Held transactions a release pays out (the caller holds their locks), now funded. */
export async function fundHeld(ctx: RuleContext, ids: string[]): Promise<void> {
  if (ids.length > 0) await moveFunding(ctx, await lockTransactions(ctx.tx, ctx.tenant, ids), 'funded');
}

/**
 * A refused deposit (rejected or voided) gives its money back: the transactions it paid out are
 * held again, to be funded by a later deposit (the ledger's `unfund:` legs are posted by the
 * transactions' statement trigger, with the deposit's change).
 */
export async function returnFundedToHeld(ctx: RuleContext, depositId: string): Promise<void> {
  await moveFunding(ctx, await lockFundedBy(ctx.tx, ctx.tenant, depositId), 'held');
}

/** One operation row per transaction and step, each with its events, in one statement. */
export async function recordFundingSteps(tx: Db, tenant: Tenant, items: FundingStep[]): Promise<void> {
  await recordOperations(tx, tenant, items.flatMap((item) => item.steps.map((step) => fundingOperation(step, item.id, item.amount, item.depositId))));
}
