/**
 * A family that rules reach which its own declaration imports (a change made through the family's
 * update from a rule the family runs): the declaration hands itself over as it is made, so the
 * rules need not import it back, which would be a circle.
 */
import type { Family } from '../engine/family.ts';

export interface LateFamily {
  /** Records the family as its declaration is made, and returns it. */
  declare(family: Family): Family;
  /** The declared family; throws when asked before the declaration ran. */
  get(): Family;
}

export function lateFamily(name: string): LateFamily {
  let declared: Family | undefined;
  return {
    declare(family) {
      declared = family;
      return family;
    },
    get() {
      if (!declared) throw new Error(`The ${name} family is not declared yet`);
      return declared;
    },
  };
}
