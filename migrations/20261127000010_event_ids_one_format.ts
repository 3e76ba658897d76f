import type { Knex } from 'knex';

/**
 * Events written by the database's own triggers (a transaction's operations, an intent finished
 * by its spent client token) get ids of the format every other object has, a prefix and 24 base62
 * characters (CONTRACT §1), instead of a prefix and a 32-digit hexadecimal uuid. The functions
 * are rewritten from their current definitions so nothing else in them changes; events already
 * written keep their ids.
 *
 * `new_object_id(prefix)`: the 24 characters are the letters and digits of two random uuids in
 * base64 (the uuids' fixed version bits leave well over 120 random bits: ids need to be unique,
 * not secret). One expression, so PostgreSQL inlines the function into the statement that calls
 * it, about 3 µs a row; a function holding a query (a select from generate_series) is planned
 * again at every statement that calls it, some 0.25 ms per card payment.
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
  await knex.raw(`
    create function new_object_id(prefix text) returns text language sql volatile parallel safe as $$
      select prefix || '_' || left(translate(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'), '+/=', ''), 24)
    $$`);
  await rewrite(knex, UUID_ID, OBJECT_ID);
}

export async function down(knex: Knex): Promise<void> {
  await rewrite(knex, OBJECT_ID, UUID_ID);
  await knex.raw('drop function new_object_id(text)');
}
