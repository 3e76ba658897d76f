import type { Knex } from 'knex';

/**
 * `/processing_settings` and `/profiles` (CONTRACT §18): one of each per processing account,
 * read through views shaped like every family table, so the generic engine lists, filters and
 * pages them. Their ids are the account's with another prefix (`acct_X` ⇔ `ps_X` ⇔ `prof_X`,
 * api/families/processing_settings/ids.ts); an expression index per view keeps a lookup by id a
 * key lookup. Lists use the accounts' tenant index by type. Indexes are built CONCURRENTLY.
 */
export const config = { transaction: false };

const INDEXES: Array<[name: string, prefix: string]> = [
  ['accounts_by_settings_id', 'ps_'],
  ['accounts_by_profile_id', 'prof_'],
];

export async function up(knex: Knex): Promise<void> {
  for (const [name, prefix] of INDEXES) {
    const invalid = await knex.raw('select 1 from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = ? and not i.indisvalid', [name]);
    if (invalid.rows.length > 0) await knex.raw(`drop index concurrently ${name}`);
    await knex.raw(`create index concurrently if not exists ${name} on accounts (('${prefix}' || substr(id, 6))) where type = 'processing'`);
  }
  await knex.raw(`
    create or replace view processing_settings as
      select 'ps_' || substr(id, 6) as id, org_id, environment, 'processing_settings'::text as type,
             jsonb_build_object(
               'account_id', id,
               'funding', coalesce(data->'processing'->'funding', '{}'::jsonb),
               'default_category', data->'processing'->'default_category') as data,
             created_at, modified_at
        from accounts where type = 'processing'`);
  await knex.raw(`
    create or replace view profiles as
      select 'prof_' || substr(id, 6) as id, org_id, environment, 'profile'::text as type,
             jsonb_build_object('account_id', id, 'name', data->'name', 'processing_settings_id', 'ps_' || substr(id, 6)) as data,
             created_at, modified_at
        from accounts where type = 'processing'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop view if exists profiles');
  await knex.raw('drop view if exists processing_settings');
  for (const [name] of INDEXES) await knex.raw(`drop index concurrently if exists ${name}`);
}
