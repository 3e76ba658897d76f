import type { Knex } from 'knex';

/**
 * Room on each page of webhook_deliveries for the row's next version. Every attempt updates its
 * delivery (attempts, state, times: no indexed column), moments after the row was inserted on a
 * page that the inserts behind it have filled by then; with free space on the page the update is
 * a heap-only tuple, which writes none of the table's three indexes. Applies to pages written from
 * now on; takes a lock that lets reads and writes go on.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table webhook_deliveries set (fillfactor = 70)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table webhook_deliveries reset (fillfactor)');
}
