/**
 * The ledger's SQL (migrations/20261123000060_ledger.ts): postings of balanced legs, and balances
 * as sums of legs. Nothing here updates or deletes a leg; the table refuses it.
 */
import { rows, type Db } from '../../db/connection.ts';
import { tenantScan } from '../../db/tenant.ts';
import type { Tenant } from '../../engine/family.ts';

export type Bucket = 'pending' | 'available' | 'held' | 'funded' | 'withdrawn' | 'world' | 'fees';

export interface Leg {
  accountId: string;
  bucket: Bucket;
  /** minor units; the legs of one posting sum to zero */
  amount: number;
}

export interface Balance {
  pending: number;
  available: number;
  held: number;
  funded: number;
  withdrawn: number;
}

/** One posting, in one statement (the balance check runs per statement). A repeated key fails. */
export async function postLegs(db: Db, tenant: Tenant, transactionId: string | null, posting: string, legs: Leg[]): Promise<void> {
  const kept = legs.filter((leg) => leg.amount !== 0);
  if (kept.length === 0) return;
  await rows(db,
    `insert into ledger_entries (org_id, environment, account_id, transaction_id, posting, bucket, amount)
     select ?, ?, account_id, ?, ?, bucket, amount from unnest(?::text[], ?::text[], ?::bigint[]) as l(account_id, bucket, amount)`,
    [tenant.orgId, tenant.environment, transactionId, posting, kept.map((l) => l.accountId), kept.map((l) => l.bucket), kept.map((l) => l.amount)]);
}

const EMPTY: Balance = { pending: 0, available: 0, held: 0, funded: 0, withdrawn: 0 };

/** Each account's buckets, summed from its legs; `withdrawn` as a positive total. */
export async function balancesOf(db: Db, tenant: Tenant, accountIds: string[]): Promise<Map<string, Balance>> {
  const result = new Map<string, Balance>(accountIds.map((id) => [id, { ...EMPTY }]));
  if (accountIds.length === 0) return result;
  const scope = tenantScan(tenant);
  const found = await rows<{ account_id: string; bucket: keyof Balance; total: string }>(db,
    `select account_id, bucket, sum(amount)::bigint as total from ledger_entries
      where ${scope.sql} and account_id = any(?::text[]) and bucket in ('pending', 'available', 'held', 'funded', 'withdrawn')
      group by account_id, bucket`,
    [...scope.bindings, accountIds]);
  for (const row of found) {
    const balance = result.get(row.account_id)!;
    balance[row.bucket] = row.bucket === 'withdrawn' ? -Number(row.total) : Number(row.total);
  }
  return result;
}

export async function bucketTotal(db: Db, tenant: Tenant, accountId: string, bucket: Bucket): Promise<number> {
  const scope = tenantScan(tenant);
  const [row] = await rows<{ total: string }>(db,
    `select coalesce(sum(amount), 0)::bigint as total from ledger_entries where ${scope.sql} and account_id = ? and bucket = ?`,
    [...scope.bindings, accountId, bucket]);
  return Number(row.total);
}

export async function postingExists(db: Db, posting: string): Promise<boolean> {
  const found = await rows(db, 'select 1 from ledger_entries where posting = ? limit 1', [posting]);
  return found.length > 0;
}
