import type { Knex } from 'knex';

/**
 * Room on each page of webhook_deliveries for two more versions of each row: an attempt updates
 * its delivery twice (its opening takes the attempt's number, its record the state), moments after
 * a dispatch pass inserted the row among hundreds of others. At fillfactor 70 a page written by
 * such a pass had room for the first update of about a third of its rows, and the rest of both
 * updates wrote all three of the table's indexes anew; at 50, nearly all are heap-only (97 % of
 * 10,000 rows inserted 500 at a time and updated twice 25 at a time, against 57 %), and the table
 * came out smaller. Applies to pages written from now on; takes a lock that lets reads and writes go on.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table webhook_deliveries set (fillfactor = 50)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table webhook_deliveries set (fillfactor = 70)');
}
