/** Timed transaction work: v2 completion, sandbox bank rejection, automatic-mode expiry. */
import type { Task } from 'graphile-worker';
import type { Db } from '../../api/db/connection.ts';
import type { DomainServices } from '../../api/engine/family.ts';
import { transitionTransaction } from '../../api/families/transactions/transitions.ts';

function transactionIdOf(payload: unknown): string {
  const id = (payload as { transaction_id?: unknown }).transaction_id;
  if (typeof id !== 'string') throw new Error('task needs a transaction_id');
  return id;
}

/** processing → processed (v2 creates answer `processing` and complete here, within a second). */
export function completeProcessing(db: Db, domain: DomainServices): Task {
  return async (payload) => {
    await transitionTransaction(db, domain, { transactionId: transactionIdOf(payload), from: ['processing'], to: 'processed' });
  };
}

/** The sandbox bank refuses an account number starting 000 a moment after processing. */
export function bankReject(db: Db, domain: DomainServices): Task {
  return async (payload) => {
    await transitionTransaction(db, domain, { transactionId: transactionIdOf(payload), from: ['processing', 'processed'], to: 'rejected', reason: 'bank_account_rejected' });
  };
}

/** An automatic-mode authorization not captured in its window is voided. */
export function expireAuthorization(db: Db, domain: DomainServices): Task {
  return async (payload) => {
    await transitionTransaction(db, domain, { transactionId: transactionIdOf(payload), from: ['authorized'], to: 'voided', reason: 'authorization_expired' });
  };
}
