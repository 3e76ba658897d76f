/**
 * Helpers for the reporting tests: the real reporting process code against a test database, on
 * an embedded chdb in a temp directory of its own (libchdb binds one data directory per process).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { TEST_REPORTING_SECRET } from './helpers/api.ts';
import { freshDatabase } from './helpers/db.ts';
import { loadConfig } from '../api/config.ts';
import { rows, type Db } from '../api/db/connection.ts';
import { freePort } from '../api/db/embedded.ts';
import { parseSnapshot, type Snapshot } from '../reporting/feed.ts';
import { startReporting, type RunningReporting } from '../reporting/main.ts';

export function tempDataDir(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-reporting-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface ReportingHandle {
  running: RunningReporting;
  stop: () => Promise<void>;
}

/** Starts the reporting process code in this process; stopped at the end of the test unless stopped before. */
export async function startTestReporting(t: Test, databaseUrl: string, dataDir: string, env: Record<string, string> = {}): Promise<ReportingHandle> {
  const config = loadConfig({ LOG_LEVEL: process.env.REPORTING_TEST_LOG ?? 'silent', REPORTING_PORT: '0', REPORTING_POLL_INTERVAL: '200', REPORTING_SECRET: TEST_REPORTING_SECRET, ...env, DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: dataDir });
  const running = await startReporting(config, { onFatal: (error) => t.fail(`reporting lost its lock: ${error.message}`) });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await running.stop();
  };
  t.teardown(stop);
  return { running, stop };
}

/**
 * A database with a reporting process already listening on a port of its own choosing (port 0, so
 * no other test process can take it first), and the web settings that reach it.
 */
export async function reportingFirst(t: Test, env: Record<string, string> = {}): Promise<{ databaseUrl: string; reporting: ReportingHandle; webEnv: Record<string, string> }> {
  const databaseUrl = await freshDatabase(t);
  const reporting = await startTestReporting(t, databaseUrl, tempDataDir(t), { ...env, REPORTING_PORT: '0' });
  return { databaseUrl, reporting, webEnv: { ...env, REPORTING_URL: reporting.running.url } };
}

export async function reservePort(): Promise<number> {
  return freePort();
}

/** The position a query must reflect to include everything committed so far (what the API sends). */
export async function positionNow(db: Db): Promise<Snapshot> {
  const [row] = await rows<{ p: string }>(db, 'select pg_current_snapshot()::text as p');
  return parseSnapshot(row.p)!;
}

/** Texts that would show a ClickHouse or SQL error leaking into a response. */
export const LEAK_PATTERN = /clickhouse|DB::|Code: \d|Exception|SELECT|FROM |stack|\.cpp|Syntax error|UNKNOWN_/i;
