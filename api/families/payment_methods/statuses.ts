/** Names of a payment method's states, shared by its declaration, its rules and the transactions that use it. */

export const BANK_CURRENCIES = ['USD', 'CAD'];

/** `status`: kept for later payments (`keep_active`), or used for the payment it came with only. */
export const METHOD_STATUSES = { active: 'active', inactive: 'inactive' } as const;

/** A bank account's `verification_status`. */
export const VERIFICATION_STATUSES = { notVerified: 'not-verified', verified: 'verified', failed: 'failed' } as const;

/** True unless the method was not kept (`keep_active: false`); methods stored before `status` existed are kept. */
export function isKept(data: Record<string, unknown>): boolean {
  return data.status !== METHOD_STATUSES.inactive;
}

/** Why a method made with `keep_active: false` cannot pay again. */
export const NOT_KEPT = 'This payment method was not kept for later use (keep_active: false)';
