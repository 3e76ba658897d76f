/**
 * The ClickHouse side of reporting, through @clickhouse/client only: embedded chdb (plugged in with
 * `createChdbConnection`, one data directory per process) by default, a ClickHouse server when
 * CLICKHOUSE_URL is set. The DDL and every statement are the same text for both. Settings that
 * matter travel in the SQL (`FINAL`, `SETTINGS …`), because a chdb session keeps session settings.
 */
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { createChdbConnection } from 'chdb/connection';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../api/config.ts';
import { insertStatement, schemaFingerprint, tableDdl } from './columns.ts';
import { EMPTY_SNAPSHOT, formatSnapshot, parseSnapshot, type Snapshot } from './feed.ts';

const STATE_NAME = 'transactions';
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface MirrorState {
  /** every transaction change visible in this Postgres snapshot is mirrored */
  position: Snapshot;
  schema: string;
}

export interface StoreTarget {
  /** what the leader lock is taken for: the data directory or the server and database */
  identity: string;
  embedded: boolean;
}

export function storeTarget(config: Config): StoreTarget {
  if (config.clickhouseUrl) return { identity: `${config.clickhouseUrl}#${config.clickhouseDatabase}`, embedded: false };
  return { identity: `chdb:${path.resolve(config.dataDir, 'clickhouse')}#${config.clickhouseDatabase}`, embedded: true };
}

export class ReportingStore {
  readonly client: ClickHouseClient;
  readonly database: string;
  readonly table: string;
  readonly embedded: boolean;
  #lastStateWrite = 0n;

  constructor(client: ClickHouseClient, database: string, embedded: boolean) {
    if (!IDENTIFIER.test(database)) throw new Error(`CLICKHOUSE_DATABASE must be an identifier, got "${database}"`);
    this.client = client;
    this.database = database;
    this.table = `${database}.transactions`;
    this.embedded = embedded;
  }

  /** Creates the database and tables; a mirror table of another shape is replaced and the position reset. */
  async ensureSchema(): Promise<{ reset: boolean }> {
    await this.command(`CREATE DATABASE IF NOT EXISTS ${this.database}`);
    await this.command(`CREATE TABLE IF NOT EXISTS ${this.database}.mirror_state (
  name String,
  snapshot String,
  schema String,
  updated_at DateTime64(6, 'UTC')
) ENGINE = ReplacingMergeTree(updated_at) ORDER BY name`);
    const state = await this.readState();
    if (state?.schema === schemaFingerprint()) {
      await this.command(tableDdl(this.table));
      return { reset: false };
    }
    await this.command(`DROP TABLE IF EXISTS ${this.table}`);
    await this.command(tableDdl(this.table));
    await this.writePosition(EMPTY_SNAPSHOT);
    return { reset: true };
  }

  async readState(): Promise<MirrorState | null> {
    const rows = await this.select<{ snapshot: string; schema: string }>(
      `SELECT snapshot, schema FROM ${this.database}.mirror_state FINAL WHERE name = {name:String}`,
      { name: STATE_NAME },
    );
    const position = rows[0] ? parseSnapshot(rows[0].snapshot) : null;
    return rows[0] ? { position: position ?? EMPTY_SNAPSHOT, schema: position ? rows[0].schema : '' } : null;
  }

  async writePosition(position: Snapshot): Promise<void> {
    // ReplacingMergeTree keeps the latest `updated_at`; make it strictly increasing within this process.
    let stamp = BigInt(Date.now()) * 1000n;
    if (stamp <= this.#lastStateWrite) stamp = this.#lastStateWrite + 1n;
    this.#lastStateWrite = stamp;
    await this.client.command({
      query: `INSERT INTO ${this.database}.mirror_state (name, snapshot, schema, updated_at)
VALUES ({name:String}, {snapshot:String}, {schema:String}, fromUnixTimestamp64Micro({stamp:Int64}, 'UTC'))`,
      query_params: { name: STATE_NAME, snapshot: formatSnapshot(position), schema: schemaFingerprint(), stamp: stamp.toString() },
    });
  }

  /** Inserts feed lines (reporting/columns.ts); the data travels in the statement text, the same for chdb and a server. */
  async insertLines(lines: string[], table = this.table): Promise<void> {
    if (lines.length === 0) return;
    await this.client.command({ query: `${insertStatement(table)}\n${lines.join('\n')}\n` });
  }

  async select<T>(query: string, params: Record<string, unknown> = {}): Promise<T[]> {
    const result = await this.client.query({ query, query_params: params, format: 'JSONEachRow' });
    return (await result.json()) as T[];
  }

  async command(query: string): Promise<void> {
    await this.client.command({ query });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

export function openStore(config: Config): ReportingStore {
  if (config.clickhouseUrl) {
    const client = createClient({
      url: config.clickhouseUrl,
      username: config.clickhouseUser,
      password: config.clickhousePassword,
      request_timeout: 60_000,
    });
    return new ReportingStore(client, config.clickhouseDatabase, false);
  }
  const dir = path.join(config.dataDir, 'clickhouse');
  fs.mkdirSync(dir, { recursive: true });
  // The connection hook is typed against @clickhouse/client-common's Connection; the two packages pin it separately.
  const client = createClient({ connection: createChdbConnection({ path: dir }) } as Parameters<typeof createClient>[0]);
  return new ReportingStore(client, config.clickhouseDatabase, true);
}
