import type { Knex } from 'knex';

/**
 * The vault keys a database's sealed values use, by id (a hash, never the key): the `active` one,
 * a `next` one while a rotation re-seals values under it, and `retired` ones. A process whose key
 * is not the active one (or, during a rotation, whose previous key is) refuses to start, so a
 * second machine with another key cannot write values no one else can open.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table vault_keys (
      id text primary key,
      state text not null check (state in ('active', 'next', 'retired')),
      created_at timestamptz not null default now(),
      retired_at timestamptz
    );
    create unique index vault_keys_one_active on vault_keys (state) where state = 'active';
    create unique index vault_keys_one_next on vault_keys (state) where state = 'next';
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table vault_keys');
}
