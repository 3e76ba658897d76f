/** Starts the real web process code on a loopback port against a fresh database. */
import type { Test } from 'tap';
import { loadConfig } from '../../api/config.ts';
import { createDb, type Db } from '../../api/db/connection.ts';
import type { Environment, KeySettings } from '../../api/keys.ts';
import { createTestKey } from './keys.ts';
import type { Seams } from '../../api/seams.ts';
import { startWeb } from '../../api/server.ts';
import { freshDatabase } from './db.ts';

export interface TestApi {
  url: string;
  databaseUrl: string;
  /** a direct connection for asserting on stored rows */
  db: Db;
  /** a test-environment secret key of org "acme" */
  key: string;
  newKey: (org: string, env: Environment, settings?: KeySettings) => Promise<string>;
  request: (method: string, path: string, options?: RequestOptions) => Promise<ApiResponse>;
  /** stops the web process before the test ends (as a restart does); the test's end stops it otherwise */
  stop: () => Promise<void>;
}

export interface RequestOptions {
  key?: string | null;
  version?: string;
  json?: unknown;
  form?: string;
  body?: string | FormData;
  headers?: Record<string, string>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

/** The REPORTING_SECRET test web and reporting processes share unless a test sets its own. */
export const TEST_REPORTING_SECRET = 'test-reporting-secret-for-the-suite';
/** What a caller of the reporting port sends with it. */
export const TEST_REPORTING_AUTH = { Authorization: `Bearer ${TEST_REPORTING_SECRET}` };

/** `database`: one the test made already (e.g. to start a reporting process first); default a fresh one. */
export async function startTestApi(t: Test, env: Record<string, string> = {}, seams: Partial<Seams> = {}, database?: string): Promise<TestApi> {
  const databaseUrl = database ?? await freshDatabase(t);
  const config = loadConfig({ LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', SETTLE_RATE_LIMIT: 'off', REPORTING_SECRET: TEST_REPORTING_SECRET, ...env, DATABASE_URL: databaseUrl, PORT: '0' });
  const web = await startWeb(config, { keyCacheMs: 0, seams });
  const db = createDb(databaseUrl, 4);
  // pg queues a query sent to a connection still running another, warns once, and pg 9 refuses it.
  const onWarning = (warning: Error) => {
    if (/already executing a query/.test(warning.message)) t.fail(`a query was sent to a busy connection: ${warning.stack}`);
  };
  process.on('warning', onWarning);
  let stopped: Promise<void> | null = null;
  const stop = () => (stopped ??= web.stop());
  t.teardown(async () => {
    process.off('warning', onWarning);
    await stop();
    await db.destroy();
  });
  const newKey = async (org: string, environment: Environment, settings: KeySettings = {}) => (await createTestKey(db, org, environment, settings)).secret;
  const key = await newKey('acme', 'test');
  const request = async (method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> => {
    const headers: Record<string, string> = { ...options.headers };
    const secret = options.key === undefined ? key : options.key;
    if (secret) headers.Authorization = `Basic ${Buffer.from(`${secret}:`).toString('base64')}`;
    if (options.version) headers['X-API-Version'] = options.version;
    let body: string | FormData | undefined = options.body;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['Content-Type'] = 'application/json';
    } else if (options.form !== undefined) {
      body = options.form;
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
    }
    const response = await fetch(web.url + path, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // keep the text: a test may assert it was not JSON
    }
    return { status: response.status, headers: response.headers, body: parsed };
  };
  return { url: web.url, databaseUrl, db, key, newKey, request, stop };
}

/** Runs the real worker process code against a test database until the test ends. */
export async function startTestWorker(t: Test, databaseUrl: string, env: Record<string, string> = {}, seams: Partial<Seams> = {}): Promise<void> {
  const { startWorker } = await import('../../workers/main.ts');
  const config = loadConfig({ LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', ...env, DATABASE_URL: databaseUrl });
  const worker = await startWorker(config, { seams });
  t.teardown(() => worker.stop());
}
