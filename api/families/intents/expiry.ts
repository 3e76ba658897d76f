/**
 * An intent or payment activation still pending at its `expires_at` expires: status `expired`,
 * with its `<object>:status` event, in one transaction that locks the row and re-checks it (a
 * completion that wins the race is never overwritten).
 */
import { rows, type Db } from '../../db/connection.ts';
import { recordEvents } from '../../db/events.ts';
import type { StoredObject } from '../../engine/family.ts';

export interface ExpiryJob {
  table: 'intents' | 'payment_activations';
  id: string;
  org_id: string;
  environment: 'test' | 'live';
}

const OBJECT: Record<ExpiryJob['table'], string> = { intents: 'intent', payment_activations: 'payment_activation' };

/** Returns true when it expired the row, false when it had finished, gone, or is not due yet. */
export async function expireLink(db: Db, job: ExpiryJob, now: Date): Promise<boolean> {
  return db.transaction(async (tx) => {
    const found = await rows<StoredObject>(tx,
      `select id, type, data, created_at, modified_at from ${job.table} where id = ? and org_id = ? and environment = ? for update`,
      [job.id, job.org_id, job.environment]);
    const row = found[0];
    if (!row || row.data.status !== 'pending' || Date.parse(String(row.data.expires_at)) > now.getTime()) return false;
    await rows(tx, `update ${job.table} set data = jsonb_set(data, '{status}', '"expired"'), modified_at = now() where id = ? and org_id = ? and environment = ?`,
      [row.id, job.org_id, job.environment]);
    const object = OBJECT[job.table];
    await recordEvents(tx, { orgId: job.org_id, environment: job.environment }, [
      { trigger: `${object}:status`, objectType: object, objectId: row.id, value: { status: 'expired', previous_status: 'pending' } },
    ]);
    return true;
  });
}
