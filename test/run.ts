/**
 * `npm test` after the type-check: provides a PostgreSQL server (TEST_DATABASE_URL or
 * DATABASE_URL when set, otherwise an embedded one), migrates a template database once, and runs
 * tap. Each test file clones the template into a database of its own, so runs never collide.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../api/config.ts';
import { startEmbeddedPostgres, type EmbeddedServer } from '../api/db/embedded.ts';
import { migrate } from '../api/db/migrate.ts';
import { adminQuery, databaseUrl } from '../api/db/admin.ts';
import { FailureCollector } from './failures.ts';

const given = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
let embedded: EmbeddedServer | null = null;
let serverUrl: string;
if (given) {
  serverUrl = given;
} else {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-test-pg-'));
  // As root, the server runs as a `postgres` user that must be able to enter this directory.
  fs.chmodSync(dir, 0o755);
  embedded = await startEmbeddedPostgres(dir, { persistent: false });
  serverUrl = embedded.url('postgres');
}

const template = `settle_tpl_${process.pid}_${Date.now().toString(36)}`;
await adminQuery(serverUrl, `create database ${template}`);
await migrate(databaseUrl(serverUrl, template));

const tapArgs = process.argv.slice(2);
const tap = spawn(path.join(projectRoot, 'node_modules/.bin/tap'), tapArgs, {
  stdio: ['inherit', 'pipe', 'inherit'],
  env: {
    ...process.env,
    PATH: `${path.join(projectRoot, 'node_modules/.bin')}:${process.env.PATH}`,
    SETTLE_TEST_SERVER_URL: serverUrl,
    SETTLE_TEST_TEMPLATE: template,
  },
});
const failures = new FailureCollector();
tap.stdout!.setEncoding('utf8');
tap.stdout!.on('data', (chunk: string) => {
  process.stdout.write(chunk);
  failures.write(chunk);
});
const code = await new Promise<number>((resolve) => tap.on('close', (c) => resolve(c ?? 1)));
process.stdout.write(failures.report());
try {
  await adminQuery(serverUrl, `drop database if exists ${template} with (force)`);
} catch {
  // the template goes with the embedded server anyway
}
if (embedded) await embedded.stop();
process.exit(code);
