/** Brings a database up to date: our knex migrations, then graphile-worker's own schema. */
import { Logger, runMigrations } from 'graphile-worker';
import { createDb } from './connection.ts';

export async function migrate(connectionString: string): Promise<string[]> {
  const db = createDb(connectionString, 2);
  try {
    const [, applied] = (await db.migrate.latest()) as [number, string[]];
    await runMigrations({ connectionString, logger: silentLogger() });
    return applied;
  } finally {
    await db.destroy();
  }
}

function silentLogger(): Logger {
  return new Logger(() => () => {});
}
