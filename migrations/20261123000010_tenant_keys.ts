import type { Knex } from 'knex';

/**
 * Lookups by id that cannot change plan as data grows. Every tenant index used to lead with the
 * plain `org_id, environment` columns, so a lookup `where id = ? and org_id = ? and environment = ?`
 * could be served by either the primary key or a tenant index; when the statistics underestimate a
 * tenant (a new, fast-growing org; a table not analysed yet) the planner picked the tenant index
 * and filtered the whole tenant by id. Tenant indexes now lead with `tenant_key(org_id,
 * environment)`: list queries name that expression, by-id queries name only the plain columns,
 * so the primary key is the one index a by-id lookup can use, whatever the statistics say.
 * Built CONCURRENTLY (outside a transaction), so a release on a large database never blocks writes.
 */
export const config = { transaction: false };

const REPLACED: Array<[oldName: string, newName: string, on: string]> = [
  ['accounts_tenant_created', 'accounts_by_tenant_created', 'accounts (tenant_key(org_id, environment), created_at, id)'],
  ['accounts_tenant_type', 'accounts_by_tenant_type', 'accounts (tenant_key(org_id, environment), type, created_at, id)'],
  ['payment_methods_tenant_created', 'payment_methods_by_tenant_created', 'payment_methods (tenant_key(org_id, environment), created_at, id)'],
  ['payment_methods_account', 'payment_methods_by_tenant_account', "payment_methods (tenant_key(org_id, environment), (data->>'account_id'))"],
  ['transactions_tenant_created', 'transactions_by_tenant_created', 'transactions (tenant_key(org_id, environment), created_at, id)'],
  ['transactions_tenant_status', 'transactions_by_tenant_status', "transactions (tenant_key(org_id, environment), (data->>'status'))"],
  ['webhooks_tenant_created', 'webhooks_by_tenant_created', 'webhooks (tenant_key(org_id, environment), created_at, id)'],
  ['webhook_logs_tenant_created', 'webhook_logs_by_tenant_created', 'webhook_logs (tenant_key(org_id, environment), created_at, id)'],
  ['events_tenant_created', 'events_by_tenant_created', 'events (tenant_key(org_id, environment), created_at)'],
];

async function buildIndex(knex: Knex, name: string, on: string): Promise<void> {
  // An interrupted concurrent build leaves an invalid index behind: build it again.
  const invalid = await knex.raw('select 1 from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = ? and not i.indisvalid', [name]);
  if (invalid.rows.length > 0) await knex.raw(`drop index concurrently ${name}`);
  await knex.raw(`create index concurrently if not exists ${name} on ${on}`);
}

export async function up(knex: Knex): Promise<void> {
  // Environments are `test`/`live`, so the key is unambiguous whatever the org id holds.
  await knex.raw(`create or replace function tenant_key(org_id text, environment text) returns text
    language sql immutable parallel safe return org_id || '/' || environment`);
  for (const [oldName, newName, on] of REPLACED) {
    await buildIndex(knex, newName, on);
    await knex.raw(`drop index concurrently if exists ${oldName}`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const [oldName, newName, on] of REPLACED) {
    await buildIndex(knex, oldName, on.replace('tenant_key(org_id, environment)', 'org_id, environment'));
    await knex.raw(`drop index concurrently if exists ${newName}`);
  }
  await knex.raw('drop function if exists tenant_key(text, text)');
}
