import type { Knex } from 'knex';

/**
 * `/transfers` (v2) and `/transaction_ledgers` (v1) read the transfers table through a view shaped
 * like every family table (id, tenant, type, data, timestamps), so the generic engine lists,
 * filters and pages it like any collection. The tenant index makes those lists key scans.
 */
export const config = { transaction: false };

export async function up(knex: Knex): Promise<void> {
  const invalid = await knex.raw(`select 1 from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = 'transfers_by_tenant_created' and not i.indisvalid`);
  if (invalid.rows.length > 0) await knex.raw('drop index concurrently transfers_by_tenant_created');
  await knex.raw('create index concurrently if not exists transfers_by_tenant_created on transfers (tenant_key(org_id, environment), created_at, id)');
  await knex.raw(`
    create or replace view transfer_entries as
      select id, org_id, environment, entry_type as type,
             jsonb_build_object(
               'transaction_id', transaction_id, 'account_id', account_id, 'assoc_transaction_id', assoc_transaction_id,
               'amount', amount, 'amount_abs', abs(amount)) as data,
             created_at, created_at as modified_at
        from transfers`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop view if exists transfer_entries');
  await knex.raw('drop index concurrently if exists transfers_by_tenant_created');
}
