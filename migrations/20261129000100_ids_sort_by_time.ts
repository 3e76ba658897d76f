import type { Knex } from 'knex';

/**
 * Ids the database mints (`new_object_id`: the events its triggers write, the audit events of
 * updates and deletes) sort by time as the service's own do (`newId` in api/ids.ts): the prefix,
 * then 7 base62 digits of the milliseconds since 2020 that sort as the time, then 17 random base62
 * characters (101 bits, CONTRACT §1). New rows then land at the right edge of their tables'
 * primary keys instead of at random pages of them.
 *
 * The random characters come from the bytes of two version-4 uuids that are all random (bytes 1-6
 * and 10-16 of each: the version and variant bits are left out) in base64, without its two
 * characters outside base62: 26 bytes give some 35 characters, of which fewer than 17 would be
 * left only if more than half were `+` or `/`. PL/pgSQL keeps the time and each uuid in a
 * variable, each drawn once (drawing a uuid for each run of bytes cost 8.1 µs an id against 6.5).
 */
const DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const EPOCH_MS = Date.UTC(2020, 0, 1);

const randomBytes = ['u', 'v'].map((uuid) => `substr(${uuid}, 1, 6) || substr(${uuid}, 10, 7)`).join(' || ');
const timeDigits = Array.from({ length: 7 }, (_, i) => `substr('${DIGITS}', (ms / ${62 ** (6 - i)} % 62)::int + 1, 1)`).join(' || ');

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function new_object_id(prefix text) returns text language plpgsql volatile parallel safe as $$
    declare
      ms bigint := greatest(0, floor(extract(epoch from clock_timestamp()) * 1000)::bigint - ${EPOCH_MS});
      u bytea := uuid_send(gen_random_uuid());
      v bytea := uuid_send(gen_random_uuid());
    begin
      return prefix || '_' || ${timeDigits}
        || left(translate(encode(${randomBytes}, 'base64'), E'+/=\\n', ''), 17);
    end $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function new_object_id(prefix text) returns text language sql volatile parallel safe as $$
      select prefix || '_' || left(translate(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'), '+/=', ''), 24)
    $$`);
}
