/** The triggers of a transaction's operations (./operations.ts `operationEvents`). */
import { trigger } from '../../db/events.ts';

export const TRANSACTION_OPERATION_TRIGGER = trigger('transaction:operation');
export const TRANSACTION_OPERATION_CLEAR_TRIGGER = trigger('transaction:operation:clear');
