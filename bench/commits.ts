/**
 * `npm run bench:commits`: how many transaction writes per second PostgreSQL commits with the
 * reporting change trigger as it is now (no NOTIFY), next to the same trigger sending a NOTIFY per
 * commit (what it did before migrations/20261123000012) — the same run, the same database.
 * PostgreSQL serialises the commits of transactions that sent a NOTIFY on one global lock.
 *
 * Postgres: DATABASE_URL when set (a server's admin database), else an embedded server. Each
 * writer is its own connection doing single-row autocommit INSERTs into `transactions`.
 * Env: BENCH_SECONDS (per variant, default 10), BENCH_CONNECTIONS (default 16).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { adminQuery, createKnex, databaseUrl } from '../api/db/admin.ts';
import { createDb } from '../api/db/connection.ts';
import { startEmbeddedPostgres, type EmbeddedServer } from '../api/db/embedded.ts';
import { migrate } from '../api/db/migrate.ts';
import * as quietCommits from '../migrations/20261123000012_reporting_quiet_commits.ts';
import { positive } from './harness.ts';

const SECONDS = positive('BENCH_SECONDS', 10);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 16);

let embedded: EmbeddedServer | null = null;
let serverUrl = process.env.DATABASE_URL;
if (!serverUrl) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-bench-pg-'));
  fs.chmodSync(dir, 0o755);
  embedded = await startEmbeddedPostgres(dir, { persistent: false });
  serverUrl = embedded.url('postgres');
}
const database = `settle_commits_${process.pid}`;
await adminQuery(serverUrl, `create database ${database}`);
const url = databaseUrl(serverUrl, database);
await migrate(url);

async function setTrigger(notify: boolean): Promise<void> {
  const db = createKnex(url, 1);
  try {
    await (notify ? quietCommits.down(db) : quietCommits.up(db));
  } finally {
    await db.destroy();
  }
}

async function writesPerSecond(): Promise<number> {
  const clients = await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    const client = new pg.Client(url);
    await client.connect();
    return client;
  }));
  let count = 0;
  const until = Date.now() + SECONDS * 1000;
  await Promise.all(clients.map(async (client, c) => {
    for (let i = 0; Date.now() < until; i++) {
      await client.query(`insert into transactions (id, org_id, environment, type, data) values ($1, 'org_bench', 'test', 'payment', '{"amount": 100}')`, [`txn_${c}_${i}_${process.hrtime.bigint()}`]);
      count++;
    }
  }));
  await Promise.all(clients.map((client) => client.end()));
  return count / SECONDS;
}

const results: Array<[string, number]> = [];
for (const [name, notify] of [['no NOTIFY (now)', false], ['NOTIFY per commit (before)', true], ['no NOTIFY (now)', false], ['NOTIFY per commit (before)', true]] as const) {
  await setTrigger(notify);
  const rate = await writesPerSecond();
  results.push([name, rate]);
  console.log(`${name.padEnd(28)} ${rate.toFixed(0).padStart(6)} commits/s`);
}
console.log(`\n${CONNECTIONS} connections, ${SECONDS} s each, ${embedded ? 'embedded' : 'server'} PostgreSQL, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);

await adminQuery(serverUrl, `drop database if exists ${database} with (force)`);
if (embedded) await embedded.stop();
process.exit(0);
