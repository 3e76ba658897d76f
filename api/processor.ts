/**
 * The payment processor seam's types: what a processor answers and what the domain asks of it.
 * Beside the seam (api/seams.ts) and below everything that calls a processor, so the sandbox, the
 * seams and the engine all import it without importing each other.
 */

/** A card network's answer to one card payment. */
export interface CardAuthorization {
  approved: boolean;
  /** `approved`, or the decline code (`insufficient_bal`) */
  statusCode: string;
  message: string;
  /** a dispute the network will raise after an approved payment is processed */
  dispute?: 'chargeback' | 'chargeback_reversal';
}

/** The processor behind payments: it decides cards and knows which bank debits will bounce. */
export interface PaymentProcessor {
  /** asynchronous, so a processor across a network fits; the sandbox answers at once */
  authorizeCard: (cardNumber: string) => Promise<CardAuthorization>;
  /**
   * The undo of an approval: voids an authorization whose payment was never stored (the write
   * after the approval failed), so the cardholder's funds are not held for nothing.
   */
  voidAuthorization: (cardNumber: string, authorization: CardAuthorization) => Promise<void>;
  /** whether the bank refuses a debit from this account shortly after it is processed */
  bankWillReject: (accountNumber: string) => boolean;
}
