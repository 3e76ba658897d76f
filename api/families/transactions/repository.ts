/** Transaction SQL beyond the generic operations: refund totals, transfer rows, timed jobs. */
import { rows, type Db } from '../../db/connection.ts';
import { tenantScan } from '../../db/tenant.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';

const ROW = 'id, type, data, created_at, modified_at';

/** Locks the original of a refund: every refund of one payment queues on this lock. */
export async function lockTransaction(db: Db, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const found = await rows<StoredObject>(db, `select ${ROW} from transactions where id = ? and org_id = ? and environment = ? for update`, [id, tenant.orgId, tenant.environment]);
  return found[0] ?? null;
}

/** Minor units already taken back from a transaction by refunds (and chargebacks) that still stand. */
export async function refundedAmount(db: Db, transactionId: string): Promise<number> {
  const found = await rows<{ total: number }>(db,
    `select coalesce(sum(f.amount), 0)::bigint as total
       from transfers f join transactions r on r.id = f.transaction_id
      where f.assoc_transaction_id = ? and f.entry_type in ('refund', 'chargeback')
        and r.data->>'status' not in ('voided', 'declined', 'rejected')`,
    [transactionId]);
  return Number(found[0].total);
}

export interface TransferRow {
  id: string;
  transaction_id: string;
  account_id: string | null;
  assoc_transaction_id: string | null;
  entry_type: string;
  amount: number;
}

export async function insertTransfers(db: Db, tenant: Tenant, entries: TransferRow[]): Promise<void> {
  if (entries.length === 0) return;
  await rows(db,
    `insert into transfers (id, org_id, environment, transaction_id, account_id, assoc_transaction_id, entry_type, amount)
     select id, ?, ?, transaction_id, account_id, assoc_transaction_id, entry_type, amount
       from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[])
         as t(id, transaction_id, account_id, assoc_transaction_id, entry_type, amount)`,
    [tenant.orgId, tenant.environment, entries.map((e) => e.id), entries.map((e) => e.transaction_id), entries.map((e) => e.account_id),
      entries.map((e) => e.assoc_transaction_id), entries.map((e) => e.entry_type), entries.map((e) => e.amount)]);
}

export async function transfersOf(db: Db, transactionIds: string[]): Promise<Array<TransferRow & { created_at: Date }>> {
  if (transactionIds.length === 0) return [];
  return rows(db,
    `select id, transaction_id, account_id, assoc_transaction_id, entry_type, amount, created_at
       from transfers where transaction_id = any(?::text[]) order by created_at, id`,
    [transactionIds]);
}

export async function findMethod(db: Db, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const found = await rows<StoredObject>(db, `select ${ROW} from payment_methods where id = ? and org_id = ? and environment = ?`, [id, tenant.orgId, tenant.environment]);
  return found[0] ?? null;
}

/** The account's default paying method (v2 account_defaults.paying payments/all; v1 default_payment_method). */
export async function defaultPayingMethod(db: Db, tenant: Tenant, accountId: string): Promise<StoredObject | null> {
  const scope = tenantScan(tenant);
  const found = await rows<StoredObject>(db,
    `select ${ROW} from payment_methods
      where ${scope.sql} and data->>'account_id' = ? and data->'account_defaults'->>'paying' in ('payments', 'all')
      order by created_at limit 1`,
    [...scope.bindings, accountId]);
  return found[0] ?? null;
}

export async function findAccount(db: Db, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const found = await rows<StoredObject>(db, `select ${ROW} from accounts where id = ? and org_id = ? and environment = ?`, [id, tenant.orgId, tenant.environment]);
  return found[0] ?? null;
}

/** Enqueues a graphile-worker job in the caller's transaction; a job key makes re-enqueueing replace, not duplicate. */
export async function scheduleJob(db: Db, task: string, payload: Record<string, unknown>, runAt: Date, jobKey?: string): Promise<void> {
  await rows(db, 'select graphile_worker.add_job(?, ?::json, run_at => ?::timestamptz, job_key => ?, max_attempts => 25)',
    [task, JSON.stringify(payload), runAt.toISOString(), jobKey ?? null]);
}

/** Spends one use of a client token inside the payment's transaction; false when already used. */
export async function spendClientToken(db: Db, tokenId: string): Promise<boolean> {
  const found = await rows(db,
    `update access_tokens set uses = uses + 1 where token_hash = decode(?, 'hex') and uses = 0 and status = 'active' and expires_at > now() returning 1`,
    [tokenId]);
  return found.length > 0;
}

export async function removeJob(db: Db, jobKey: string): Promise<void> {
  await rows(db, 'select graphile_worker.remove_job(?)', [jobKey]);
}
