/**
 * The sandbox processor (CONTRACT §7): every Luhn-valid card is approved except 4111 1111 1111
 * 99NN, declined with the code NN names; a bank account number starting 000 is rejected by the
 * bank shortly after processing; two cards are disputed after processing. `sandboxProcessor` is
 * the domain's default `PaymentProcessor`; a real processor plugs in beside it.
 */
import type { CardAuthorization, PaymentProcessor } from '../../processor.ts';

const DECLINE_CODES = [
  'card_expired',
  'duplicate_attempt',
  'exceeded_limit',
  'general_decline',
  'insufficient_bal',
  'invalid_card_code',
  'invalid_card_number',
  'invalid_zip',
  'suspicious_activity',
  'too_many_attempts',
];

export type CardOutcome = Omit<CardAuthorization, 'dispute'>;

export function cardOutcome(cardNumber: string): CardOutcome {
  const match = /^41111111111199(\d\d)$/.exec(cardNumber);
  const code = match ? DECLINE_CODES[Number(match[1])] : undefined;
  if (code) return { approved: false, statusCode: code, message: `Declined: ${code.replace(/_/g, ' ')}` };
  return { approved: true, statusCode: 'approved', message: 'Approved' };
}

export function bankWillReject(accountNumber: string): boolean {
  return accountNumber.startsWith('000');
}

/** Sandbox disputes (CONTRACT §14): 4000 0000 0000 0259 is charged back; 4000 0000 0000 2685 is charged back, then reversed. */
export function disputeOutcome(cardNumber: string): 'chargeback' | 'chargeback_reversal' | null {
  if (cardNumber === '4000000000000259') return 'chargeback';
  if (cardNumber === '4000000000002685') return 'chargeback_reversal';
  return null;
}

export const sandboxProcessor: PaymentProcessor = {
  async authorizeCard(cardNumber) {
    const outcome = cardOutcome(cardNumber);
    const dispute = outcome.approved ? disputeOutcome(cardNumber) : null;
    return dispute ? { ...outcome, dispute } : outcome;
  },
  // The sandbox holds no funds: an authorization ends with nothing to release.
  async voidAuthorization() {},
  bankWillReject,
};
