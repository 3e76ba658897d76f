import type { Knex } from 'knex';

/**
 * Accounts by entity: verification settles every processing account an entity backs, and an
 * entity that still backs an account cannot be deleted. Built CONCURRENTLY (outside a
 * transaction) so a release on a large accounts table never blocks writes.
 */
export const config = { transaction: false };

const NAME = 'accounts_by_tenant_entity';

export async function up(knex: Knex): Promise<void> {
  const invalid = await knex.raw('select 1 from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = ? and not i.indisvalid', [NAME]);
  if (invalid.rows.length > 0) await knex.raw(`drop index concurrently ${NAME}`);
  await knex.raw(`create index concurrently if not exists ${NAME} on accounts (tenant_key(org_id, environment), (data->>'entity_id'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`drop index concurrently if exists ${NAME}`);
}
