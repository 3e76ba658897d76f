import type { Knex } from 'knex';
import { createIndexesConcurrently, dropIndexesConcurrently } from './support/concurrentIndexes.ts';

/**
 * An attempt's answer completes its log in place, heap-only. The log is written `in_flight` as the
 * request goes out and updated with the answer moments later; its index by webhook was an
 * expression over `data`, so every answer (a change of `data`) wrote all four of the table's
 * indexes anew. The webhook now sits in a generated column, which an answer leaves as it was
 * (Postgres compares the indexed values, and this one does not change), and the index reads the
 * column. The answer's new version must fit on its log's page, beside the other logs a batch
 * opened there and answered in the same statement (whose old versions cannot be pruned meanwhile):
 * in the backlog drain of bench/webhooks.ts, 0.44 of the answers were heap-only at fillfactor 70,
 * all of them at 40 (as webhook_deliveries, migrations/20261206003100).
 *
 * Adding a stored generated column rewrites the table once, under a lock that holds its readers
 * and writers for as long (seconds at a million logs, which retention keeps the table below); the
 * indexes are built and dropped CONCURRENTLY after it.
 */
export const config = { transaction: false };

const BY_WEBHOOK: Array<[string, string]> = [['webhook_logs_by_webhook', 'webhook_logs (webhook_id, created_at)']];
const BY_WEBHOOK_EXPRESSION: Array<[string, string]> = [['webhook_logs_webhook', "webhook_logs ((data->>'webhook_id'), created_at)"]];

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table webhook_logs add column if not exists webhook_id text generated always as (data->>'webhook_id') stored`);
  await createIndexesConcurrently(knex, BY_WEBHOOK);
  await dropIndexesConcurrently(knex, BY_WEBHOOK_EXPRESSION);
  await knex.raw('alter table webhook_logs set (fillfactor = 40)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table webhook_logs reset (fillfactor)');
  await createIndexesConcurrently(knex, BY_WEBHOOK_EXPRESSION);
  await dropIndexesConcurrently(knex, BY_WEBHOOK);
  await knex.raw('alter table webhook_logs drop column if exists webhook_id');
}
