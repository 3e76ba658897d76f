/**
 * The processing account a test environment reset by `DELETE /test_data` starts with, as a new
 * org's does: active, and the environment's default as its first processing account
 * (CONTRACT §3). Made by the family's own create as the system, so its rules, its audit event and
 * its `processing_status` event are those of any processing account.
 */
import { runAudited } from '../../db/auditContext.ts';
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { createNested } from '../../engine/operations.ts';
import { accounts } from './family.ts';

const DEFAULT_ACCOUNT_ACTOR = { actor: { type: 'system' as const, name: 'default_processing_account' } };

/** `ctx.version` is v1: the body is a v1 processing account's. */
export function openDefaultProcessingAccount(ctx: RuleContext & { version: 'v1' }, name: string): Promise<StoredObject> {
  return runAudited(DEFAULT_ACCOUNT_ACTOR, () => createNested(ctx, accounts, { type: 'processing', name, status: 'active' }));
}
