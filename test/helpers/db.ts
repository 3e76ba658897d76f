/** A fresh database per test file, cloned from the migrated template that test/run.ts made. */
import type { Test } from 'tap';
import { adminQuery, databaseUrl } from '../../api/db/admin.ts';
import { randomBytes } from 'node:crypto';

export function testServerUrl(): string {
  const url = process.env.SETTLE_TEST_SERVER_URL;
  if (!url) throw new Error('Run the tests with `npm test` (test/run.ts provides the database)');
  return url;
}

function urlFor(database: string): string {
  return databaseUrl(testServerUrl(), database);
}

function admin(sql: string): Promise<void> {
  return adminQuery(testServerUrl(), sql);
}

/** Creates a database for this test file and drops it when the test ends. */
export async function freshDatabase(t: Test): Promise<string> {
  const name = `settle_t_${randomBytes(6).toString('hex')}`;
  await admin(`create database ${name} template ${process.env.SETTLE_TEST_TEMPLATE}`);
  t.teardown(async () => {
    await admin(`drop database if exists ${name} with (force)`);
  });
  return urlFor(name);
}
