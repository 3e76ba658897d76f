/** Server-level chores shared by the CLI, the test runner and the benchmarks: naming and creating databases, knex for migrations. */
import type { Knex } from 'knex';
import { createRequire } from 'node:module';
import path from 'node:path';
import { projectRoot } from '../config.ts';
import { primaryClient, primaryUrl } from './primary.ts';

const require = createRequire(import.meta.url);

/** The same server, another database. */
export function databaseUrl(serverUrl: string, database: string): string {
  const parsed = new URL(serverUrl);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** Runs one statement on its own connection (create/drop database cannot run in a transaction or pool). */
export async function adminQuery(url: string, sql: string): Promise<void> {
  const client = primaryClient(url);
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * A knex instance, for what knex earns its place with: the migrator and administration. Loaded on
 * demand, so a process that never migrates or administers never loads knex.
 */
export function createKnex(connectionString: string, poolSize = 2): Knex {
  const knexFactory = require('knex') as typeof import('knex').knex;
  return knexFactory({
    client: 'pg',
    // A multi-host URL resolves to the host accepting writes when the first connection is made (a
    // knex instance serves one migration or command, not a long-running process).
    connection: async () => ({ connectionString: await primaryUrl(connectionString), application_name: 'settle' }),
    pool: { min: 0, max: poolSize },
    migrations: {
      directory: path.join(projectRoot, 'migrations'),
      loadExtensions: ['.ts'],
      tableName: 'settle_migrations',
    },
  });
}
