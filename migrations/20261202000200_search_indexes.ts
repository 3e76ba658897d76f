import type { Knex } from 'knex';
import { createIndexesConcurrently, dropIndexesConcurrently } from './support/concurrentIndexes.ts';

/**
 * Indexes for the console's search (CONTRACT §25), which asks the list API for customers and
 * transactions with `q` terms `email ? "*ann*"`, `order_number ? "*ann*"`, `amount == 12.5`,
 * `customer_id == "acct_…"` and the like, OR-ed together, answering as the operator types.
 *
 * - Substring matches (`?` with `*term*`, compiled to ILIKE) use pg_trgm GIN indexes: a term of
 *   three or more characters finds its rows by their trigrams instead of reading every row of the
 *   tenant. pg_trgm ships with PostgreSQL (contrib; the embedded server has it too) and is a
 *   trusted extension, so the database's owner may create it.
 * - Equalities on an amount, a customer or a payment method use btree indexes after the tenant.
 *
 * Each expression is the one the query compiler writes (`data #>> '{path}'`), so the planner
 * matches it; every arm of the OR has an index, so it is a BitmapOr of index scans.
 */
export const config = { transaction: false };

const TRIGRAM = (path: string) => `using gin ((data #>> '{${path}}') gin_trgm_ops)`;
const BY_TENANT = (expression: string) => `(tenant_key(org_id, environment), (${expression}))`;

const INDEXES: Array<[name: string, on: string]> = [
  ['accounts_search_email', `accounts ${TRIGRAM('email')}`],
  ['accounts_search_name', `accounts ${TRIGRAM('name')}`],
  ['transactions_search_order_number', `transactions ${TRIGRAM('order_number')}`],
  ['transactions_search_description', `transactions ${TRIGRAM('description')}`],
  ['transactions_search_card_number', `transactions ${TRIGRAM('payment_method,card,card_number')}`],
  ['transactions_search_account_number', `transactions ${TRIGRAM('payment_method,bank_account,account_number')}`],
  ['transactions_by_tenant_amount', `transactions ${BY_TENANT("(data #>> '{amount}')::bigint")}`],
  ['transactions_by_tenant_customer', `transactions ${BY_TENANT("data #>> '{customer_id}'")}`],
  ['transactions_by_tenant_method', `transactions ${BY_TENANT("data #>> '{payment_method_id}'")}`],
  ['payment_methods_search_account', `payment_methods ${BY_TENANT("data #>> '{account_id}'")}`],
];

export async function up(knex: Knex): Promise<void> {
  await knex.raw('create extension if not exists pg_trgm');
  await createIndexesConcurrently(knex, INDEXES);
  // The planner weighs a substring match by the indexed expressions' statistics, which ANALYZE
  // gathers; until then it may walk the newest rows instead of using the trigrams.
  await knex.raw('analyze accounts, transactions, payment_methods');
}

export async function down(knex: Knex): Promise<void> {
  await dropIndexesConcurrently(knex, INDEXES);
}
