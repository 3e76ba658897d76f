/**
 * Transactions the service makes on its own: a funding run's deposits and withdrawals to the
 * merchant's funding method, and the card network's chargebacks and their reversals. They are
 * created through the one create service (`createFromValues`) from typed input, never an API
 * body, so the family's rules store their parties, their transfer rows and their events as for
 * any transaction; what only a client's transaction has (the processor, the client's checks, a
 * requested release's ledger posting) is skipped for them by their maker (`made_by`).
 */
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { createFromValues } from '../../engine/operations.ts';
import type { Json } from '../../engine/view.ts';
import { newId } from '../../ids.ts';
import { transactions } from './family.ts';
import type { SystemMaker } from './lifecycle.ts';

/** A transfer row of the new transaction, and (`mirror`) the associated transaction's own row for it. */
export interface SystemEntry {
  entry_type: string;
  account_id: string | null;
  assoc_transaction_id: string | null;
  /** minor units */
  amount: number;
  /** the amount of the associated transaction's own row for this entry, in minor units */
  mirror?: number;
}

export interface SystemTransaction {
  type: 'deposit' | 'withdraw' | 'chargeback' | 'chargeback_reversal';
  madeBy: SystemMaker;
  /** minor units */
  amount: number;
  customerId: string | null;
  processingId: string | null;
  method: { id: string; type: string } | null;
  /** what the row records of its method (a chargeback copies its payment's) */
  methodFacts: { payment_method: Json | null; payment_method_type: string | null; card_brand: string | null };
  statusCode: string;
  statusMessage: string;
  description?: string;
  fundingTiming?: 'rapid';
  entries: SystemEntry[];
}

export async function createSystemTransaction(ctx: RuleContext, input: SystemTransaction): Promise<StoredObject> {
  return createFromValues(ctx, transactions, input.type, {
    made_by: input.madeBy,
    amount: input.amount,
    status: 'processed',
    status_code: input.statusCode,
    status_message: input.statusMessage,
    customer_id: input.customerId,
    processing_id: input.processingId,
    payment_method_id: input.method?.id ?? null,
    ...input.methodFacts,
    ...(input.description === undefined ? {} : { description: input.description }),
    ...(input.fundingTiming === undefined ? {} : { funding_timing: input.fundingTiming }),
    trigger: 'automatic',
    attrs: {},
    transfer_plan: input.entries.map((entry) => ({ id: newId('trf'), ...entry })),
  });
}
