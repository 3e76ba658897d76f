/** Names of a payment method's states, shared by its declaration, its rules and the transactions that use it. */

export const BANK_CURRENCIES = ['USD', 'CAD'];

/** `status`: kept for later payments (`keep_active`), or used for the payment it came with only. */
export const METHOD_STATUSES = { active: 'active', inactive: 'inactive' } as const;

/** A bank account's `verification_status`. */
export const VERIFICATION_STATUSES = { notVerified: 'not-verified', verified: 'verified', failed: 'failed' } as const;

/** A method's status: as stored, or for one stored before `status` existed, as its `keep_active` says. */
export function methodStatus(data: Record<string, unknown>): string {
  if (typeof data.status === 'string') return data.status;
  return data.keep_active === false ? METHOD_STATUSES.inactive : METHOD_STATUSES.active;
}

/** True unless the method was not kept for later payments (`keep_active: false`). */
export function isKept(data: Record<string, unknown>): boolean {
  return methodStatus(data) !== METHOD_STATUSES.inactive;
}

/** Why a method made with `keep_active: false` cannot pay again. */
export const NOT_KEPT = 'This payment method was not kept for later use (keep_active: false)';
