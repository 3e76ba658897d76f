/**
 * Deposits and withdrawals asked for through the API are transactions whose rules are the funding
 * family's (api/families/funding/release.ts: the funds they may move, their ledger posting, the
 * held transactions a deposit funds). The registry hands those rules over (api/families/index.ts),
 * so this family imports nothing of funding, which builds on it.
 */
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import type { Json } from '../../engine/view.ts';

export interface ReleaseRules {
  /** the processing account's funding method, a release's method when the request names none */
  defaultFundingMethod: (ctx: RuleContext, processingId: string | undefined) => Promise<StoredObject | null>;
  /** checks a requested release under the account's lock and fills in its default amount */
  planRelease: (ctx: RuleContext, type: string, data: Json, processingId: string, method: StoredObject | null) => Promise<void>;
  /** posts a stored release to the ledger, and funds the held transactions a deposit covers */
  postRelease: (ctx: RuleContext, row: StoredObject) => Promise<void>;
}

let registered: ReleaseRules | null = null;

export function registerReleaseRules(rules: ReleaseRules): void {
  registered = rules;
}

export function releaseRules(): ReleaseRules {
  if (!registered) throw new Error('The funding family registers the release rules: import api/families/index.ts first');
  return registered;
}

export function isRelease(type: string): boolean {
  return type === 'deposit' || type === 'withdraw';
}
