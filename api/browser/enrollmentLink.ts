/** Finding an enrollment link by its id alone: the id in the page address is the capability. */
import type { Db } from '../db/connection.ts';
import type { Tenant } from '../engine/family.ts';
import type { EnrollmentTarget } from '../families/intents/enrollment.ts';
import { findLinkById } from '../families/intents/repository.ts';

export interface EnrollmentLink {
  target: EnrollmentTarget;
  tenant: Tenant;
  kind: 'payouts' | 'account';
  status: string;
  expired: boolean;
  /** who the link is for, shown on the page */
  entityName: string | null;
}

export async function findEnrollmentLink(db: Db, id: string, now: Date): Promise<EnrollmentLink | null> {
  const table = id.startsWith('int_') ? 'intents' : id.startsWith('pa_') ? 'payment_activations' : null;
  if (!table) return null;
  const found = await findLinkById(db, table, id);
  if (!found) return null;
  const kind = table === 'payment_activations' || found.type === 'payouts_enrollment_link' ? 'payouts' : found.type === 'account_enrollment_link' ? 'account' : null;
  if (!kind) return null;
  const options = (found.data[found.type] ?? found.data.intent ?? {}) as Record<string, unknown>;
  return {
    target: { table, id },
    tenant: { orgId: found.org_id, environment: found.environment },
    kind,
    status: String(found.data.status),
    expired: Date.parse(String(found.data.expires_at)) <= now.getTime(),
    entityName: typeof options.entity_name === 'string' ? options.entity_name : null,
  };
}
