/** Funding SQL on the transaction side: the account lock, the funding method, due items. */
import { rows, type Db } from '../../db/connection.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import { tenantCheck, tenantScan } from '../../db/tenant.ts';
import type { StoredObject, Tenant } from '../../engine/family.ts';
import type { FundingItem } from '../transactions/funding.ts';
import { METHOD_ACCOUNT_SQL } from '../payment_methods/accountSql.ts';

const ROW = STORED_ROW;

/** The processing account, locked: funding runs, releases and instant funding of one account queue here. */
export async function lockProcessingAccount(db: Db, tenant: Tenant, id: string): Promise<StoredObject | null> {
  const scope = tenantCheck(tenant);
  const found = await rows<StoredObject>(db, `select ${ROW} from accounts where id = ? and ${scope.sql} and type = 'processing' for update`, [id, ...scope.bindings]);
  return found[0] ?? null;
}

/** The account's bank method with `account_defaults.funding` deposits or all (v2), the oldest first. */
export async function fundingMethod(db: Db, tenant: Tenant, accountId: string): Promise<StoredObject | null> {
  const scope = tenantScan(tenant);
  const found = await rows<StoredObject>(db,
    `select ${ROW} from payment_methods
      where ${scope.sql} and ${METHOD_ACCOUNT_SQL} = ? and type = 'bank_account' and data->'account_defaults'->>'funding' in ('deposits', 'all')
      order by created_at, id limit 1`,
    [...scope.bindings, accountId]);
  return found[0] ?? null;
}

/** Held items of an account, oldest first, locked (a manual release decides which it pays out). */
export async function lockHeldItems(db: Db, tenant: Tenant, accountId: string): Promise<FundingItem[]> {
  const scope = tenantScan(tenant, 't');
  const found = await rows<FundingItem & { amount: string; fee: string }>(db,
    `select t.id, t.type, 'held' as was, (t.data->>'amount')::bigint as amount, coalesce((t.data->>'fee')::bigint, 0) as fee
       from transactions t
      where ${scope.sql} and t.data->>'processing_id' = ? and t.data->>'funding_status' in ('pending', 'held') and t.data->>'funding_status' = 'held'
      order by t.created_at, t.id for update of t`,
    [...scope.bindings, accountId]);
  return found.map((r) => ({ ...r, amount: Number(r.amount), fee: Number(r.fee) }));
}

/**
 * Processing accounts of a tenant (or of every tenant) a run has work for: items due by a date or
 * held, or available money no item explains (a bank rejection after payout).
 */
export async function accountsWithDueItems(db: Db, dueBy: string, tenant?: Tenant): Promise<Array<{ org_id: string; environment: 'test' | 'live'; account_id: string }>> {
  const scope = tenant ? tenantScan(tenant) : { sql: 'true', bindings: [] };
  return rows(db,
    `select org_id, environment, data->>'processing_id' as account_id from transactions
      where ${scope.sql} and data->>'funding_status' in ('pending', 'held') and data->>'funding_date' <= ?
     union
     select org_id, environment, account_id from ledger_entries
      where ${scope.sql} and bucket = 'available' group by org_id, environment, account_id having sum(amount) <> 0
     order by 1, 2, 3`,
    [...scope.bindings, dueBy, ...scope.bindings]);
}

/** Gross-style accounts of a tenant (or all), for the monthly fee withdrawal. */
export async function grossAccounts(db: Db, tenant?: Tenant): Promise<Array<{ org_id: string; environment: 'test' | 'live'; account_id: string }>> {
  const scope = tenant ? tenantScan(tenant) : { sql: 'true', bindings: [] };
  return rows(db,
    `select org_id, environment, id as account_id from accounts
      where ${scope.sql} and type = 'processing' and data->'processing'->'funding'->>'style' = 'gross' order by 1, 2, 3`,
    scope.bindings);
}

export async function transactionAccount(db: Db, transactionId: string): Promise<{ org_id: string; environment: 'test' | 'live'; account_id: string | null } | null> {
  const found = await rows<{ org_id: string; environment: 'test' | 'live'; account_id: string | null }>(db,
    `select org_id, environment, data->>'processing_id' as account_id from transactions where id = ?`, [transactionId]);
  return found[0] ?? null;
}
