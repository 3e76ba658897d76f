/**
 * The audit event of an action that changes no audited row: a webhook's test event, a payment
 * link's e-mail sent again. It names the object and what was done, with the actor of the work
 * under way, like the audit triggers' events (migration 20261126000300), in the caller's
 * transaction, so it commits with the work it records.
 */
import type { Db } from './connection.ts';
import type { Tenant } from './tenant.ts';

/** Actions recorded here; the triggers' own (create, update, refund, …) come from row changes. */
export const AUDIT_ACTIONS = { sendTestEvent: 'send_test_event', resendEmail: 'resend_email' } as const;
type AuditAction = (typeof AUDIT_ACTIONS)[keyof typeof AUDIT_ACTIONS];

/** `details` are shown as the event's `changes`, each `[null, value]` like a field a create sets. */
export async function recordAuditAction(tx: Db, tenant: Tenant, action: AuditAction, objectType: string, objectId: string, details: Record<string, string>): Promise<void> {
  const changes = Object.fromEntries(Object.entries(details).map(([key, value]) => [key, [null, value]]));
  await tx.raw(
    `insert into audit_events (id, org_id, environment, data)
     select audit_id(), ?, ?, audit_data(audit_context(), ?, ?, ?, ?::jsonb)`,
    [tenant.orgId, tenant.environment, action, objectType, objectId, JSON.stringify(changes)]);
}
