import type { Knex } from 'knex';

/** The test environment's clock (CONTRACT §15): one row per org's test environment, absent until first moved. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table test_clocks (
      org_id text not null,
      environment text not null check (environment = 'test'),
      now timestamptz not null,
      modified_at timestamptz not null default now(),
      primary key (org_id, environment)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table if exists test_clocks');
}
