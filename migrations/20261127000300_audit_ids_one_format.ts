import type { Knex } from 'knex';

/**
 * Audit events get ids of the format every other object has, `aud_` and 24 base62 characters
 * (CONTRACT §1, through `new_object_id`), instead of `aud_` and a 32-digit hexadecimal uuid.
 * Events already written keep their ids.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function audit_id() returns text language plpgsql volatile as $$
    begin
      return new_object_id('aud');
    end $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function audit_id() returns text language plpgsql volatile as $$
    begin
      return 'aud_' || replace(gen_random_uuid()::text, '-', '');
    end $$`);
}
