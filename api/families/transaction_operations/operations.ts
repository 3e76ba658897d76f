/**
 * A transaction's steps as operation rows (CONTRACT §14): which step a status change is, and the
 * events each operation fires. Every writer of a transaction's status records its step through
 * these, in the statement or transaction that changes the status.
 */
import type { EventDraft } from '../../db/events.ts';
import type { StoredObject } from '../../db/storedRow.ts';
import { newId } from '../../ids.ts';
import { formatMoney } from '../../schema/values.ts';
import { TRANSACTION_OPERATION_CLEAR_TRIGGER, TRANSACTION_OPERATION_TRIGGER } from './triggers.ts';

export const OPERATION_TYPES = ['authorize', 'process', 'capture', 'void', 'refund', 'decline', 'reject', 'fund', 'clear', 'chargeback'] as const;
export type OperationType = (typeof OPERATION_TYPES)[number];

export interface OperationDraft {
  id: string;
  type: OperationType;
  transactionId: string;
  /** minor units */
  amount: number;
  status: 'complete' | 'failed';
  /** the deposit that funded the transaction (a `fund` step) */
  depositId?: string;
}

/** The step a transaction of `kind` takes when its status moves from `from` to `to`, or null when it takes none. */
export function operationTypeOf(kind: string, from: unknown, to: unknown): OperationType | null {
  if (from === to) return null;
  if (to === 'declined') return 'decline';
  if (to === 'authorized') return 'authorize';
  if (to === 'processed') return from === 'authorized' ? 'capture' : kind === 'refund' ? 'refund' : 'process';
  if (to === 'voided') return 'void';
  if (to === 'rejected') return 'reject';
  return null;
}

/** The operation a stored change of a transaction's status is (`previous` null on create), or null. */
export function statusOperation(next: StoredObject, previous: StoredObject | null): OperationDraft | null {
  const type = operationTypeOf(next.type, previous ? previous.data.status : null, next.data.status);
  if (!type) return null;
  return { id: newId('op'), type, transactionId: next.id, amount: Number(next.data.amount), status: type === 'decline' ? 'failed' : 'complete' };
}

/** A funding step (`clear`, `fund`, `chargeback`) of a transaction: always complete. */
export function fundingOperation(type: 'clear' | 'fund' | 'chargeback', transactionId: string, amount: number, depositId?: string): OperationDraft {
  return { id: newId('op'), type, transactionId, amount, status: 'complete', depositId };
}

/** Every operation's `transaction:operation` event, and `transaction:operation:clear` for a clear. */
export function operationEvents(operations: OperationDraft[]): EventDraft[] {
  return operations.flatMap((op) => {
    const value = { object: 'transaction_operation', id: op.id, type: op.type, status: op.status, amount: formatMoney(op.amount) };
    const event = { objectType: 'transaction', objectId: op.transactionId, value };
    return op.type === 'clear'
      ? [{ ...event, trigger: TRANSACTION_OPERATION_TRIGGER }, { ...event, trigger: TRANSACTION_OPERATION_CLEAR_TRIGGER }]
      : [{ ...event, trigger: TRANSACTION_OPERATION_TRIGGER }];
  });
}

/** An operation's stored `data`. */
export function operationData(op: OperationDraft): Record<string, unknown> {
  return { transaction_id: op.transactionId, amount: op.amount, status: op.status, ...(op.depositId ? { deposit_id: op.depositId } : {}) };
}
