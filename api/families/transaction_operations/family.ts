/**
 * Transaction operations (CONTRACT §14), read-only: one per step of a transaction (authorize,
 * process, capture, void, refund, decline, reject), written with the step by a trigger on
 * `transactions` (migrations/20261123000013) together with its `transaction:operation` event.
 */
import type { Family, FieldSpec } from '../../engine/family.ts';
import { idField, timestampFields } from '../common.ts';
import { TRANSACTION_OPERATION_CLEAR_TRIGGER, TRANSACTION_OPERATION_TRIGGER } from './triggers.ts';

export const OPERATION_TYPES = ['authorize', 'process', 'capture', 'void', 'refund', 'decline', 'reject', 'fund', 'clear', 'chargeback'];

const both = (path: string) => ({ v1: path, v2: path, readOnly: true });

const fields: FieldSpec[] = [
  idField,
  { store: 'type', type: 'string', ...both('type'), enum: OPERATION_TYPES },
  { store: 'transaction_id', type: 'id', ...both('transaction_id') },
  { store: 'amount', type: 'money', ...both('amount') },
  { store: 'status', type: 'string', ...both('status'), enum: ['complete', 'failed'] },
  ...timestampFields,
];

export const transactionOperations: Family = {
  name: 'transaction_operation',
  table: 'transaction_operations',
  idPrefix: 'op',
  types: OPERATION_TYPES,
  fields,
  objectName: () => 'transaction_operation',
  /** an operation is recorded, and clearing completes one (api/families/funding/repository.ts) */
  triggers: [TRANSACTION_OPERATION_TRIGGER, TRANSACTION_OPERATION_CLEAR_TRIGGER],
};
