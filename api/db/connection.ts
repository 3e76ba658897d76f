/** The knex instance every repository uses; one pool per process. */
import knexFactory, { type Knex } from 'knex';
import path from 'node:path';
import pg from 'pg';
import { projectRoot } from '../config.ts';

// BIGINT (money in minor units, seq) comes back as a JS number: amounts stay far below 2^53.
pg.types.setTypeParser(20, (value: string) => Number(value));

export type Db = Knex;

export function createDb(connectionString: string, poolSize = 10): Db {
  return knexFactory({
    client: 'pg',
    connection: { connectionString, application_name: 'settle' },
    pool: { min: 0, max: poolSize },
    migrations: {
      directory: path.join(projectRoot, 'migrations'),
      loadExtensions: ['.ts'],
      tableName: 'settle_migrations',
    },
  });
}

/** Runs parameterised SQL (values always bound, never spliced) and returns its rows. */
export async function rows<T = Record<string, unknown>>(db: Db, sql: string, bindings: readonly unknown[] = []): Promise<T[]> {
  const result = await db.raw(sql, bindings as Knex.RawBinding[]);
  return result.rows as T[];
}
