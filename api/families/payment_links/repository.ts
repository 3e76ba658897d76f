/** Payment link SQL beyond the generic operations. */
import { rows, type Db } from '../../db/connection.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';
import { STORED_ROW } from '../../db/storedRow.ts';

/** Locks a link while a payment through it is decided: a one-time link is paid once. */
export async function lockPaymentLink(db: Db, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const found = await rows<StoredObject>(db,
    `select ${STORED_ROW} from payment_links where id = ? and org_id = ? and environment = ? for update`,
    [id, tenant.orgId, tenant.environment]);
  return found[0] ?? null;
}
