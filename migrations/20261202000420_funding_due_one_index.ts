import type { Knex } from 'knex';

/**
 * Each processed payment entered two partial indexes of items waiting for funding: one per
 * tenant and processing account (the funding run of an account, a test clock's run), one by date
 * alone for the daily run's question "which accounts have anything due". The daily run asks once
 * a day, and the per-tenant index answers it too, read whole (it holds only the items still
 * pending or held, a few days of payments) with the date checked in the index: one entry a
 * payment fewer.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('drop index transactions_funding_due_any');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    create index transactions_funding_due_any on transactions ((data->>'funding_date'))
      where data->>'funding_status' in ('pending', 'held')`);
}
