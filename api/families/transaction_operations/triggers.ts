/**
 * The triggers of a transaction's operations. Their events are written by the database trigger
 * on each operation row (migration 20261123000013), which names them in SQL.
 */
import { trigger } from '../../db/events.ts';

export const TRANSACTION_OPERATION_TRIGGER = trigger('transaction:operation');
export const TRANSACTION_OPERATION_CLEAR_TRIGGER = trigger('transaction:operation:clear');
