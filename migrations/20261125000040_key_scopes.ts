import type { Knex } from 'knex';

/**
 * Restricted keys and rotation: a key's `scopes` (null: every collection) and its `expires_at`
 * (a rolled key keeps working until then), and the key it was rolled from.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table api_keys add column scopes text[];
    alter table api_keys add column expires_at timestamptz;
    alter table api_keys add column rolled_from text references api_keys(id);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table api_keys drop column rolled_from;
    alter table api_keys drop column expires_at;
    alter table api_keys drop column scopes;
  `);
}
