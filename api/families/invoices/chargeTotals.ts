/** What a charge totals, in minor units: by its own amount, or as a share of the invoice's number charges. */

/** `total = amount × qty`, in minor units, rounded half-up. */
export function chargeTotal(amount: number, qty: number): number {
  return Math.round(amount * qty);
}

/**
 * A percentage charge's total: `percent` is stored like money (8.5 % → 850), so the share of
 * `numberTotal` minor units is numberTotal × percent × qty / 10000, rounded half-up (the recompute
 * keeps it in step as the other charges change: ./recompute.ts).
 */
export function percentageTotal(numberTotal: number, percent: number, qty: number): number {
  return Math.round((numberTotal * percent * qty) / 10000);
}
