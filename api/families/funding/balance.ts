/** A processing account's `balance` (CONTRACT §14): its ledger buckets, in major units. */
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { balancesOf } from './ledger.ts';

export async function showBalances(ctx: RuleContext, rows: StoredObject[]): Promise<void> {
  const processing = rows.filter((row) => row.type === 'processing');
  const balances = await balancesOf(ctx.tx, ctx.tenant, processing.map((row) => row.id));
  for (const row of processing) {
    const b = balances.get(row.id)!;
    row.data = { ...row.data, balance: { pending: b.pending / 100, available: b.available / 100, held: b.held / 100, funded: b.funded / 100, withdrawn: b.withdrawn / 100 } };
  }
}
