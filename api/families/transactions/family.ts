/**
 * Transactions: one table, two views. v1 `customer_id`/`processing_id`/`payment_method_id`,
 * `credit`/`reversal`, status as a string, `ledger`; v2 `sender`/`receiver`, `payout`/`withdraw`,
 * `status.value`, `transfers`. Both party representations are stored, written together once at
 * creation, so each version filters on its own fields.
 */
import type { Family } from '../../engine/family.ts';
import { declareTransactionFamily } from './declared.ts';
import { transactionShape } from './fields.ts';
import { paymentSteps } from './payment.ts';
import { transactionRules } from './rules.ts';
import { TRANSACTION_TRIGGERS } from './triggers.ts';


export const transactions: Family = declareTransactionFamily({
  ...transactionShape,
  rules: { ...transactionRules, createSteps: paymentSteps },
  triggers: Object.values(TRANSACTION_TRIGGERS),
  // made without an intent: one payment or one payment method, whatever the browser sends (CONTRACT §13)
  clientScopes: { checkout_plugin: ['create'], checkout_page: ['create'], payment_form: ['create'], none: ['create'] },
});
