/** A fresh database per test file, cloned from the migrated template that test/run.ts made. */
import type { Test } from 'tap';
import pg from 'pg';
import { randomBytes } from 'node:crypto';

export function testServerUrl(): string {
  const url = process.env.SETTLE_TEST_SERVER_URL;
  if (!url) throw new Error('Run the tests with `npm test` (test/run.ts provides the database)');
  return url;
}

function urlFor(database: string): string {
  const parsed = new URL(testServerUrl());
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client(testServerUrl());
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
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
