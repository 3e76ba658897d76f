/**
 * The invoice family and its charges' family, as the recompute reaches them (./recompute.ts):
 * every change of an item recomputes its invoice through these families' update, but their
 * declarations import the rules that run the recompute.
 */
import type { Family } from '../../engine/family.ts';
import { lateFamily, type LateFamily } from '../lateFamily.ts';

type Role = 'invoice' | 'charge';

const declared: Record<Role, LateFamily> = { invoice: lateFamily('invoice'), charge: lateFamily('charge') };

export function declareInvoiceFamily(role: Role, family: Family): Family {
  return declared[role].declare(family);
}

export function invoiceFamily(role: Role): Family {
  return declared[role].get();
}
