/**
 * A webhook's health as its deliveries find it: a failure streak, and disabling. Each is a change
 * of the webhook through its family's update (api/engine/operations.ts: updateNested), made by the
 * actor `system`: the family's rules keep the reason given here, its audit records the change, and
 * its events rule announces `webhook:status` once, on the change from active.
 */
import { runAudited, type AuditContext } from '../../api/db/auditContext.ts';
import { rows, type Db } from '../../api/db/connection.ts';
import { STORED_ROW } from '../../api/db/storedRow.ts';
import type { DomainServices, RuleContext, StoredObject, Tenant } from '../../api/engine/family.ts';
import { updateNested } from '../../api/engine/operations.ts';
import { webhooks } from '../../api/families/webhooks/family.ts';
import { WEBHOOK_STATUSES } from '../../api/families/webhooks/health.ts';

/** `disabled_reason` of a webhook whose receiver answered 410. */
export const DISABLED_GONE = 'The receiver answered 410 Gone';

/** The audit actor of the changes the delivery worker makes to a webhook. */
const HEALTH_ACTOR: AuditContext = { actor: { type: 'system', name: 'webhook_health' } };

/** `disabled_reason` of a webhook whose retries kept running out for `disableAfterMs`. */
export function disabledFailing(disableAfterMs: number): string {
  const units: Array<[string, number]> = [['day', 86_400_000], ['hour', 3_600_000], ['minute', 60_000], ['second', 1000]];
  const [unit, size] = units.find(([, ms]) => disableAfterMs % ms === 0) ?? ['second', 1000];
  const count = Math.max(1, Math.round(disableAfterMs / size));
  return `Every retry failed for ${count} ${unit}${count === 1 ? '' : 's'} (WEBHOOK_DISABLE_AFTER)`;
}

/** The webhook with its tenant, its row locked until the transaction ends. */
async function lockedWebhook(tx: Db, webhookId: string): Promise<{ tenant: Tenant; row: StoredObject } | null> {
  const [found] = await rows<StoredObject & { org_id: string; environment: Tenant['environment'] }>(tx,
    `select ${STORED_ROW}, org_id, environment from webhooks where id = ? for update`, [webhookId]);
  if (!found) return null;
  const { org_id: orgId, environment, ...row } = found;
  return { tenant: { orgId, environment }, row };
}

/**
 * Applies the stored values `change` answers for the locked webhook (none: nothing to change)
 * through the family's update, on the worker's clock `at`. True when this disabled it.
 */
async function changeHealth(db: Db, domain: DomainServices, webhookId: string, at: Date, change: (row: StoredObject) => Map<string, unknown> | null): Promise<boolean> {
  return runAudited(HEALTH_ACTOR, () => db.transaction(async (tx) => {
    const found = await lockedWebhook(tx, webhookId);
    const values = found && change(found.row);
    if (!found || !values) return false;
    const ctx: RuleContext = {
      tx, tenant: found.tenant, version: 'v1', domain: { ...domain, now: () => at },
      principal: { kind: 'secret', keyId: HEALTH_ACTOR.actor.name!, settings: {} },
    };
    const updated = await updateNested(ctx, webhooks, found.row, {}, values);
    return found.row.data.status === WEBHOOK_STATUSES.active && updated.data.status === WEBHOOK_STATUSES.disabled;
  }));
}

/**
 * A schedule exhausted at `at` (the worker's clock): the webhook's failure streak starts (or goes
 * on); past the limit it is disabled. True when this disabled it.
 */
export async function noteExhausted(db: Db, domain: DomainServices, webhookId: string, disableAfterMs: number, at: Date): Promise<boolean> {
  return changeHealth(db, domain, webhookId, at, (row) => {
    const started = typeof row.data.failing_since === 'string';
    const since = started ? String(row.data.failing_since) : at.toISOString();
    const disabling = row.data.status === WEBHOOK_STATUSES.active && Date.parse(since) <= at.getTime() - disableAfterMs;
    if (started && !disabling) return null;
    const values = new Map<string, unknown>([['failing_since', since]]);
    if (disabling) values.set('status', WEBHOOK_STATUSES.disabled).set('disabled_reason', disabledFailing(disableAfterMs));
    return values;
  });
}

/** Disables a webhook (a receiver answered 410 Gone). True when this disabled it. */
export async function disableWebhook(db: Db, domain: DomainServices, webhookId: string, reason: string, at: Date): Promise<boolean> {
  return changeHealth(db, domain, webhookId, at, (row) => (row.data.status === WEBHOOK_STATUSES.active
    ? new Map<string, unknown>([['status', WEBHOOK_STATUSES.disabled], ['disabled_reason', reason]])
    : null));
}
