import type { Knex } from 'knex';
import { createIndexesConcurrently, dropIndexesConcurrently } from './support/concurrentIndexes.ts';

/**
 * A log's webhook as a column of its own (`webhook_id`, kept from `data` by Postgres), indexed in
 * place of the index over the expression `data->>'webhook_id'`. An index over an expression of
 * `data` makes every update of `data` write a new entry in each of the table's indexes; an
 * attempt's answer updates its log's `data` and changes no indexed column, so with room on the page
 * for the answered version it is a heap-only update, written once. Fillfactor 50 leaves that room
 * on every page: in the backlog drain of bench/webhooks.ts all of the answers were heap-only (0.46
 * at fillfactor 70), for pages that hold half the logs they could. Adding the column rewrites the
 * table under an exclusive lock (its reads and writes wait meanwhile); the indexes are built and dropped CONCURRENTLY, so the migration
 * runs outside a transaction.
 */
export const config = { transaction: false };

const BY_WEBHOOK: Array<[name: string, on: string]> = [['webhook_logs_by_webhook', 'webhook_logs (webhook_id, created_at)']];
const BY_DATA: Array<[name: string, on: string]> = [['webhook_logs_webhook', `webhook_logs ((data->>'webhook_id'), created_at)`]];

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table webhook_logs add column if not exists webhook_id text generated always as (data->>'webhook_id') stored`);
  await createIndexesConcurrently(knex, BY_WEBHOOK);
  await dropIndexesConcurrently(knex, BY_DATA);
  await knex.raw('alter table webhook_logs set (fillfactor = 50)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table webhook_logs reset (fillfactor)');
  await createIndexesConcurrently(knex, BY_DATA);
  await dropIndexesConcurrently(knex, BY_WEBHOOK);
  await knex.raw('alter table webhook_logs drop column if exists webhook_id');
}
