import type { Knex } from 'knex';

/**
 * Room on each page of webhook_deliveries for two more versions of each row: an attempt updates
 * its delivery twice (its opening takes the attempt's number, its record the state), moments after
 * a dispatch pass inserted the row among hundreds of others. At fillfactor 70 a page written by
 * such a pass had room for the first update of about a third of its rows, and the rest of both
 * updates wrote all three of the table's indexes anew. At 40, 10,000 rows inserted 500 at a time
 * and updated twice 25 at a time were all heap-only (57 % at 70, 97 % at 50), in a table no
 * larger than at 70 (299 pages against 311: the updates that were not heap-only grew it); in the
 * backlog drain of bench/webhooks.ts, 1.8–1.9 of a delivery's two updates were heap-only (0.8–1.3 at 70,
 * 1.1–1.4 at 50). Applies to pages written from now on; takes a lock that lets reads and writes go on.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table webhook_deliveries set (fillfactor = 40)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table webhook_deliveries set (fillfactor = 70)');
}
