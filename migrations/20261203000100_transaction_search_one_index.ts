import type { Knex } from 'knex';
import { createIndexesConcurrently, dropIndexesConcurrently } from './support/concurrentIndexes.ts';

/**
 * The console's substring search over a transaction's order number, description, card and bank
 * account number reads one multicolumn trigram index instead of four: a GIN index answers a
 * condition on any one of its columns from that column's own entries (each arm of the search's OR
 * is a bitmap scan of it), and a payment written adds its trigrams to one index, through one
 * pending-list insert, instead of four (bench:payments counts the entries per payment).
 */
export const config = { transaction: false };

const TRIGRAM_PATHS = ['order_number', 'description', 'payment_method,card,card_number', 'payment_method,bank_account,account_number'];
const ONE: Array<[string, string]> = [
  ['transactions_search_text', `transactions using gin (${TRIGRAM_PATHS.map((path) => `(data #>> '{${path}}') gin_trgm_ops`).join(', ')})`],
];
const FOUR: Array<[string, string]> = [
  ['transactions_search_order_number', `transactions using gin ((data #>> '{order_number}') gin_trgm_ops)`],
  ['transactions_search_description', `transactions using gin ((data #>> '{description}') gin_trgm_ops)`],
  ['transactions_search_card_number', `transactions using gin ((data #>> '{payment_method,card,card_number}') gin_trgm_ops)`],
  ['transactions_search_account_number', `transactions using gin ((data #>> '{payment_method,bank_account,account_number}') gin_trgm_ops)`],
];

export async function up(knex: Knex): Promise<void> {
  await createIndexesConcurrently(knex, ONE);
  await dropIndexesConcurrently(knex, FOUR);
}

export async function down(knex: Knex): Promise<void> {
  await createIndexesConcurrently(knex, FOUR);
  await dropIndexesConcurrently(knex, ONE);
}
