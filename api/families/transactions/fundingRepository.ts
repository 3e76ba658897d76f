/**
 * Funding SQL of the transaction table: the funding run's claim of due transactions and a
 * release's payout of held ones. Called by the family's funding steps (./funding.ts) only.
 */
import { rows, type Db } from '../../db/connection.ts';
import { tenantScan } from '../../db/tenant.ts';
import type { Tenant } from '../../engine/family.ts';

export interface FundingItem {
  id: string;
  type: string;
  /** funding status before this change */
  was: 'pending' | 'held';
  amount: number;
  fee: number;
}

export interface SettleSpec {
  accountId: string;
  /** funding date (YYYY-MM-DD) up to which pending items are due */
  dueBy: string;
  to: 'funded' | 'held';
  /** items already held are settled too */
  includeHeld: boolean;
  /** only these transactions (instant funding) */
  only?: string[];
}

/**
 * Marks the due items and returns them; the row locks make a second, concurrent run find nothing.
 * A row a request holds (a refund of it, a void) is skipped, not waited for: it is funded by the
 * next run, and a request that locks that row before the account cannot deadlock with the run.
 */
export async function settleDueItems(db: Db, tenant: Tenant, spec: SettleSpec): Promise<FundingItem[]> {
  const scope = tenantScan(tenant, 't');
  const only = spec.only ? ' and t.id = any(?::text[])' : '';
  const found = await rows<FundingItem & { amount: string; fee: string }>(db,
    `with due as (
       select t.id, t.data->>'funding_status' as was from transactions t
        where ${scope.sql} and t.data->>'processing_id' = ? and t.data->>'funding_status' in ('pending', 'held')
          and ((t.data->>'funding_status' = 'pending' and t.data->>'funding_date' <= ?) or (? and t.data->>'funding_status' = 'held'))${only}
        order by t.id for update of t skip locked
     )
     update transactions t set data = t.data || jsonb_build_object('funding_status', ?::text), modified_at = now()
       from due where t.id = due.id
     returning t.id, t.type, due.was, (t.data->>'amount')::bigint as amount, coalesce((t.data->>'fee')::bigint, 0) as fee`,
    [...scope.bindings, spec.accountId, spec.dueBy, spec.includeHeld, ...(spec.only ? [spec.only] : []), spec.to]);
  return found.map((r) => ({ ...r, amount: Number(r.amount), fee: Number(r.fee) })).sort((a, b) => (a.id < b.id ? -1 : 1));
}

export async function markFunded(db: Db, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await rows(db, `update transactions set data = data || '{"funding_status": "funded"}'::jsonb, modified_at = now() where id = any(?::text[])`, [ids]);
}

