import type { Knex } from 'knex';

/**
 * Builds indexes CONCURRENTLY (the migration runs outside a transaction), so a release on a large
 * database never blocks writes while they build. An interrupted concurrent build leaves an
 * invalid index behind: it is dropped and built again.
 */
export async function createIndexesConcurrently(knex: Knex, indexes: Array<[name: string, on: string]>): Promise<void> {
  for (const [name, on] of indexes) {
    const invalid = await knex.raw('select 1 from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = ? and not i.indisvalid', [name]);
    if (invalid.rows.length > 0) await knex.raw(`drop index concurrently ${name}`);
    await knex.raw(`create index concurrently if not exists ${name} on ${on}`);
  }
}

export async function dropIndexesConcurrently(knex: Knex, indexes: Array<[name: string, on: string]>): Promise<void> {
  for (const [name] of indexes) await knex.raw(`drop index concurrently if exists ${name}`);
}
