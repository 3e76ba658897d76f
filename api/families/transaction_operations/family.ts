/**
 * Transaction operations (CONTRACT §14), read-only: one per step of a transaction (authorize,
 * process, capture, void, refund, decline, reject, and the funding run's clear, fund and
 * chargeback), written with the step by the writer that changes the transaction (./repository.ts),
 * together with its `transaction:operation` event.
 */
import type { Family, FieldSpec } from '../../engine/family.ts';
import { idField, timestampFields } from '../common.ts';
import { OPERATION_TYPES as TYPES } from './operations.ts';
import { TRANSACTION_OPERATION_CLEAR_TRIGGER, TRANSACTION_OPERATION_TRIGGER } from './triggers.ts';

export const OPERATION_TYPES: string[] = [...TYPES];

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
