import type { Knex } from 'knex';
import { INVOICE_RECOMPUTE_SQL } from './20261123000020_invoices.ts';

/**
 * An invoice's recompute is a change through the invoice family's update (api/families/invoices/
 * recompute.ts): its totals, status and percentage charges are written by the door's audited
 * statement, and a payment that stops standing releases its allocations in its own change through
 * the item family's delete (api/families/transactions/allocations.ts). The SQL that wrote them
 * beside the door goes: `invoice_recompute`, and the trigger on `transactions` that released
 * allocations with it. `down` restores both as they were (migration 20261123000020).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    drop trigger if exists transactions_release_invoice_allocations on transactions;
    drop function if exists release_invoice_allocations();
    drop function if exists invoice_recompute(text, text, text, text[]);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(INVOICE_RECOMPUTE_SQL);
}
