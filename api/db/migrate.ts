/** Brings a database up to date: our knex migrations, then graphile-worker's own schema. */
import { Logger, runMigrations } from 'graphile-worker';
import { createKnex } from './admin.ts';
import { primaryUrl } from './primary.ts';

export async function migrate(connectionString: string): Promise<string[]> {
  const knex = createKnex(connectionString, 2);
  try {
    const [, applied] = (await knex.migrate.latest()) as [number, string[]];
    await runMigrations({ connectionString: await primaryUrl(connectionString), logger: silentLogger() });
    return applied;
  } finally {
    await knex.destroy();
  }
}

function silentLogger(): Logger {
  return new Logger(() => () => {});
}
