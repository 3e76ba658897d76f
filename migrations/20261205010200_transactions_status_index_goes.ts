import type { Knex } from 'knex';
import { createIndexesConcurrently, dropIndexesConcurrently } from './support/concurrentIndexes.ts';

/**
 * Transactions lose their index by tenant and `data->>'status'`, one index entry fewer per
 * transaction stored (a card payment's among them). No query reads it: the list API compiles
 * `status == "…"` as `data #>> '{status}'`, which the planner does not match to that spelling, and
 * reads the tenant's newest rows through `transactions_by_tenant_created` (test/transaction-
 * status-plans.test.ts); the repositories ask for a status only of rows already found by id.
 * Dropped CONCURRENTLY, outside a transaction, so payments never wait on it.
 */
export const config = { transaction: false };

const BY_STATUS: Array<[string, string]> = [
  ['transactions_by_tenant_status', "transactions (tenant_key(org_id, environment), (data->>'status'))"],
];

export async function up(knex: Knex): Promise<void> {
  await dropIndexesConcurrently(knex, BY_STATUS);
}

export async function down(knex: Knex): Promise<void> {
  await createIndexesConcurrently(knex, BY_STATUS);
}
