import type { Knex } from 'knex';

/**
 * Events written by the database's own triggers (a transaction's operations, an intent finished
 * by its spent client token) get ids of the format every other object has, a prefix and 24 base62
 * characters (CONTRACT §1), instead of a prefix and a 32-digit hexadecimal uuid. The functions
 * are rewritten from their current definitions so nothing else in them changes; events already
 * written keep their ids.
 */
const FUNCTIONS = ['transaction_note_inserted_operations', 'transaction_note_updated_operations', 'finish_intent_of_spent_token'];
const UUID_ID = `'evt_' || replace(gen_random_uuid()::text, '-', '')`;
const OBJECT_ID = `new_object_id('evt')`;

async function rewrite(knex: Knex, from: string, to: string): Promise<void> {
  for (const name of FUNCTIONS) {
    const found = await knex.raw('select pg_get_functiondef(?::regproc) as definition', [name]);
    const definition: string = found.rows[0].definition;
    if (!definition.includes(from)) throw new Error(`${name}: no event id to rewrite`);
    await knex.raw(definition.split(from).join(to).replace(/\?/g, '\\?'));
  }
}

export async function up(knex: Knex): Promise<void> {
  // PostgreSQL's random() is seeded per session from a strong source; ids need to be unique, not secret.
  await knex.raw(`
    create function new_object_id(prefix text) returns text language sql volatile parallel safe as $$
      select prefix || '_' || string_agg(substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', 1 + floor(random() * 62)::int, 1), '')
        from generate_series(1, 24)
    $$`);
  await rewrite(knex, UUID_ID, OBJECT_ID);
}

export async function down(knex: Knex): Promise<void> {
  await rewrite(knex, OBJECT_ID, UUID_ID);
  await knex.raw('drop function new_object_id(text)');
}
