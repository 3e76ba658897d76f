/**
 * An intent or payment activation still pending at its `expires_at` expires: status `expired`
 * through its family's update (with its `<object>:status` event), in one transaction that locks
 * the row and re-checks it (a completion that wins the race is never overwritten).
 */
import type { Db } from '../../db/connection.ts';
import type { DomainServices, RuleContext, Tenant } from '../../engine/family.ts';
import { expireLinkRow } from '../linkEnd.ts';
import { lockLink, type LinkTable } from './repository.ts';
import { EXPIRE_TASK } from './links.ts';

export interface ExpiryJob {
  table: LinkTable;
  id: string;
  org_id: string;
  environment: 'test' | 'live';
}

/** Returns true when it expired the row, false when it had finished, gone, or is not due yet. */
export async function expireLink(db: Db, domain: DomainServices, job: ExpiryJob, now: Date): Promise<boolean> {
  return db.transaction(async (tx) => {
    const tenant: Tenant = { orgId: job.org_id, environment: job.environment };
    const row = await lockLink(tx, job.table, tenant, job.id);
    if (!row || row.data.status !== 'pending' || Date.parse(String(row.data.expires_at)) > now.getTime()) return false;
    const ctx: RuleContext = { tx, tenant, version: 'v1', domain, principal: { kind: 'secret', keyId: EXPIRE_TASK, settings: {} } };
    await expireLinkRow(ctx, job.table, row);
    return true;
  });
}
