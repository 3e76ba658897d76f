/**
 * An intent or payment activation still pending at its `expires_at` expires: status `expired`,
 * with its `<object>:status` event, in one transaction that locks the row and re-checks it (a
 * completion that wins the race is never overwritten).
 */
import type { Db } from '../../db/connection.ts';
import { recordEvents } from '../../db/events.ts';
import type { Tenant } from '../../engine/family.ts';
import { lockLink, markLinkExpired, type LinkTable } from './repository.ts';
import { LINK_OBJECTS } from './triggers.ts';

export interface ExpiryJob {
  table: LinkTable;
  id: string;
  org_id: string;
  environment: 'test' | 'live';
}


/** Returns true when it expired the row, false when it had finished, gone, or is not due yet. */
export async function expireLink(db: Db, job: ExpiryJob, now: Date): Promise<boolean> {
  return db.transaction(async (tx) => {
    const tenant: Tenant = { orgId: job.org_id, environment: job.environment };
    const row = await lockLink(tx, job.table, tenant, job.id);
    if (!row || row.data.status !== 'pending' || Date.parse(String(row.data.expires_at)) > now.getTime()) return false;
    await markLinkExpired(tx, job.table, tenant, row.id);
    const object = LINK_OBJECTS[job.table];
    await recordEvents(tx, tenant, [
      { trigger: object.trigger, objectType: object.name, objectId: row.id, value: { status: 'expired', previous_status: 'pending' } },
    ]);
    return true;
  });
}
