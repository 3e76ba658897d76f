/** Server-level chores shared by the CLI, the test runner and the benchmarks: naming and creating databases. */
import pg from 'pg';

/** The same server, another database. */
export function databaseUrl(serverUrl: string, database: string): string {
  const parsed = new URL(serverUrl);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** Runs one statement on its own connection (create/drop database cannot run in a transaction or pool). */
export async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
