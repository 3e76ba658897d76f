/**
 * The intent family, as a client token's spend reaches it (./tokenSpend.ts): the spend finishes
 * the token's intent through the family's update, but the family's rules issue client tokens and
 * so reach, through the families a token pays with, the spend itself. The declaration hands itself
 * here as it is made, rather than the spend importing it back (a circle).
 */
import type { Family } from '../../engine/family.ts';

let declared: Family | undefined;

export function declareIntentFamily(family: Family): Family {
  declared = family;
  return family;
}

export function intentFamily(): Family {
  if (!declared) throw new Error('The intent family is not declared yet');
  return declared;
}
