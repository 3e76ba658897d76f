import type { Knex } from 'knex';

/**
 * An event's value is rendered as the API renders the object: money in decimal units. The
 * operation triggers built `transaction:operation` values from the stored column (minor units:
 * 4000 for a 40.00 operation); they now divide it, rewritten from their current definitions so
 * nothing else in them changes. Events already written keep what they were sent with.
 */
const FUNCTIONS = ['transaction_note_inserted_operations', 'transaction_note_updated_operations'];
const MINOR = `'amount', data->'amount')`;
const UNITS = `'amount', round((data->>'amount')::numeric / 100, 2))`;

async function rewrite(knex: Knex, from: string, to: string): Promise<void> {
  for (const name of FUNCTIONS) {
    const found = await knex.raw('select pg_get_functiondef(?::regproc) as definition', [name]);
    const definition: string = found.rows[0].definition;
    if (!definition.includes(from)) throw new Error(`${name}: no event amount to rewrite`);
    await knex.raw(definition.replace(from, to).replace(/\?/g, '\\?'));
  }
}

export async function up(knex: Knex): Promise<void> {
  await rewrite(knex, MINOR, UNITS);
}

export async function down(knex: Knex): Promise<void> {
  await rewrite(knex, UNITS, MINOR);
}
