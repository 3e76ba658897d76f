/**
 * Transfers and ledger entries, read-only: one row per movement tied to a transaction (a split's
 * share, a refund and its mirror on the original), written by the transactions family. v1 shows
 * them as `transaction_ledger` with signed amounts (money going back out is negative); v2 as
 * `transfer` with the amount's size and its `type`.
 */
import type { Family, FieldSpec, Version } from '../../engine/family.ts';
import { idField } from '../common.ts';
import { TRANSFER_TRIGGER } from './triggers.ts';

const both = (path: string) => ({ v1: path, v2: path, readOnly: true });

const fields: FieldSpec[] = [
  idField,
  { store: 'type', type: 'string', v1: 'entry_type', v2: 'type', readOnly: true },
  { store: 'transaction_id', type: 'id', ...both('transaction_id') },
  { store: 'assoc_transaction_id', type: 'id', ...both('assoc_transaction_id') },
  { store: 'account_id', type: 'id', ...both('account_id') },
  { store: 'amount', type: 'money', v1: 'amount', readOnly: true },
  { store: 'amount_abs', type: 'money', v2: 'amount', readOnly: true },
  { store: 'created_at', type: 'datetime', ...both('created_at') },
];

export const transferEntries: Family = {
  name: 'transfer',
  table: 'transfer_entries',
  idPrefix: 'trf',
  types: ['transfer', 'refund'],
  fields,
  objectName: (version: Version) => (version === 'v1' ? 'transaction_ledger' : 'transfer'),
  /** a split payment's money moves to a receiver (spec §6 rule 4) */
  triggers: [TRANSFER_TRIGGER],
};
