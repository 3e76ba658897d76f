/**
 * Retention: idempotency records, webhook delivery logs and dispatched events past their keeping
 * time are deleted (api/db/retention.ts), a bounded batch per statement until none is left, so a
 * run never holds many locks at once however large the backlog. Scheduled by the worker's
 * crontab (SETTLE_RETENTION_SCHEDULE); graphile-worker runs each scheduled time once across all
 * worker processes, and two runs that overlap take disjoint rows.
 */
import type { Task } from 'graphile-worker';
import type { Config } from '../../api/config.ts';
import type { Db } from '../../api/db/connection.ts';
import { deleteExpiredAuditEvents, deleteExpiredEvents, deleteExpiredIdempotencyKeys, deleteExpiredWebhookLogs, RETENTION_BATCH } from '../../api/db/retention.ts';

export const RETENTION_TASK = 'retention';

export type RetentionPolicy = Pick<Config, 'idempotencyRetentionMs' | 'eventRetentionMs' | 'webhookLogRetentionMs' | 'auditRetentionMs'>;

export interface RetentionReport {
  idempotency_keys: number;
  webhook_logs: number;
  events: number;
  audit_events: number;
}

/** Repeats one batch while batches come back full. */
async function drain(batch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await batch();
    total += deleted;
    if (deleted < RETENTION_BATCH) return total;
  }
}

/** One retention run; every kind is attempted even when another fails, then the first failure is thrown. */
export async function applyRetention(db: Db, policy: RetentionPolicy): Promise<RetentionReport> {
  const kinds: Array<[keyof RetentionReport, () => Promise<number>]> = [
    ['idempotency_keys', () => deleteExpiredIdempotencyKeys(db, policy.idempotencyRetentionMs)],
    ['webhook_logs', () => deleteExpiredWebhookLogs(db, policy.webhookLogRetentionMs)],
    ['events', () => deleteExpiredEvents(db, policy.eventRetentionMs)],
    ['audit_events', () => deleteExpiredAuditEvents(db, policy.auditRetentionMs)],
  ];
  const report: RetentionReport = { idempotency_keys: 0, webhook_logs: 0, events: 0, audit_events: 0 };
  let failure: unknown = null;
  for (const [kind, batch] of kinds) {
    try {
      report[kind] = await drain(batch);
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure) throw failure;
  return report;
}

export function retentionTask(db: Db, policy: RetentionPolicy): Task {
  return async (_payload, helpers) => {
    const report = await applyRetention(db, policy);
    if (Object.values(report).some((n) => n > 0)) helpers.logger.info('retention: deleted expired rows', { ...report });
  };
}

/** The worker's crontab line: one run per scheduled time, at most one waiting (job key). */
export function retentionCrontab(config: Pick<Config, 'retentionSchedule'>): string {
  return config.retentionSchedule ? `${config.retentionSchedule} ${RETENTION_TASK} ?max=5&jobKey=${RETENTION_TASK}` : '';
}
