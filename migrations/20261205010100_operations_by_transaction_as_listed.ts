import type { Knex } from 'knex';
import { createIndexesConcurrently, dropIndexesConcurrently } from './support/concurrentIndexes.ts';

/**
 * A transaction's operations are read through the list API (the console's transaction page asks
 * `transaction_id == "txn_…"`), which compiles the field as `data #>> '{transaction_id}'` within
 * the tenant. The planner matches an index by its expression's spelling, so the index on
 * `data->>'transaction_id'` served no query and the list read every operation of the tenant. It
 * is replaced by one in the list's spelling, in the tenant: the same one entry per operation.
 * Built CONCURRENTLY, outside a transaction, so payments never wait on it.
 */
export const config = { transaction: false };

const BY_TRANSACTION_AS_LISTED: Array<[string, string]> = [
  ['transaction_operations_search_transaction', "transaction_operations (tenant_key(org_id, environment), (data #>> '{transaction_id}'))"],
];

const BY_TRANSACTION_UNREAD: Array<[string, string]> = [
  ['transaction_operations_transaction', "transaction_operations ((data->>'transaction_id'), created_at)"],
];

export async function up(knex: Knex): Promise<void> {
  await createIndexesConcurrently(knex, BY_TRANSACTION_AS_LISTED);
  await dropIndexesConcurrently(knex, BY_TRANSACTION_UNREAD);
}

export async function down(knex: Knex): Promise<void> {
  await createIndexesConcurrently(knex, BY_TRANSACTION_UNREAD);
  await dropIndexesConcurrently(knex, BY_TRANSACTION_AS_LISTED);
}
