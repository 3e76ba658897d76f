/** The triggers transactions fire, by the step that fires them (spec §6; v1 names for payouts and withdrawals). */
import { trigger } from '../../db/events.ts';

export const TRANSACTION_TRIGGERS = {
  payment: trigger('payment'),
  refund: trigger('refund'),
  credit: trigger('credit'),
  deposit: trigger('deposit'),
  reversal: trigger('reversal'),
  chargeback: trigger('chargeback'),
  chargebackReversal: trigger('chargeback_reversal'),
  authorized: trigger('authorized'),
  processed: trigger('processed'),
  decline: trigger('decline'),
  void: trigger('void'),
  reject: trigger('reject'),
  bankAccountReject: trigger('bank_account_reject'),
} as const;
