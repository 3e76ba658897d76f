import type { Knex } from 'knex';
import { createIndexesConcurrently, dropIndexesConcurrently } from './support/concurrentIndexes.ts';

/**
 * A payment method's account was indexed twice, by tenant and `data->>'account_id'` (the writers'
 * questions) and by tenant and `data #>> '{account_id}'` (the console's search, as the list API
 * compiles it): the same value, but the planner matches an index by its expression's spelling.
 * The writers now ask with the search's spelling (api/families/payment_methods/accountSql.ts), so
 * the first index goes: one index entry fewer for every method stored, a card payment's among them.
 */
export const config = { transaction: false };

const BY_TENANT_ACCOUNT: Array<[string, string]> = [
  ['payment_methods_by_tenant_account', "payment_methods (tenant_key(org_id, environment), (data->>'account_id'))"],
];

export async function up(knex: Knex): Promise<void> {
  await dropIndexesConcurrently(knex, BY_TENANT_ACCOUNT);
}

export async function down(knex: Knex): Promise<void> {
  await createIndexesConcurrently(knex, BY_TENANT_ACCOUNT);
}
