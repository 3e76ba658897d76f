/**
 * The invoice family and its charges' family, as the recompute reaches them (./recompute.ts):
 * every change of an item recomputes its invoice through these families' update, but their
 * declarations import the rules that run the recompute. Each declaration hands itself here as it
 * is made, rather than the rules importing it back (a circle).
 */
import type { Family } from '../../engine/family.ts';

type Role = 'invoice' | 'charge';

const declared = new Map<Role, Family>();

export function declareInvoiceFamily(role: Role, family: Family): Family {
  declared.set(role, family);
  return family;
}

export function invoiceFamily(role: Role): Family {
  const family = declared.get(role);
  if (!family) throw new Error(`The ${role} family is not declared yet`);
  return family;
}
