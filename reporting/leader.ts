/**
 * Who mirrors: a Postgres session-level advisory lock per ClickHouse target. The holder keeps one
 * dedicated connection open for as long as it leads; when that process dies or its connection
 * drops (Postgres restarting included), Postgres releases the lock and the next attempt, this
 * process's own or a standby's, takes it. The same connection LISTENs for change notifications and
 * for wake-ups from standbys.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { primaryClient } from '../api/db/primary.ts';
import { listenOn, pingConnection, tryAdvisoryLock } from './repository.ts';

export const CHANGES_CHANNEL = 'reporting_changes';
export const WAKE_CHANNEL = 'reporting_wake';

/** A connection that cannot be opened, or a round trip on it that does not come back, counts as lost within this long. */
const LOCK_CONNECTION_TIMEOUT_MS = 10_000;

/** Two int4 keys from the target's identity, so different stores never contend. */
function lockKeys(identity: string): [number, number] {
  const digest = createHash('sha256').update(`settle-reporting:${identity}`).digest();
  return [digest.readInt32BE(0), digest.readInt32BE(4)];
}

export interface LeaderEvents {
  /** a change or a standby's wake-up arrived */
  onNotify: (channel: string) => void;
  /** the lock's connection is gone: this process no longer leads */
  onLost: (error: Error) => void;
}

export class LeaderLock {
  readonly #databaseUrl: string;
  readonly #keys: [number, number];
  #client: pg.Client | null = null;

  constructor(databaseUrl: string, identity: string) {
    this.#databaseUrl = databaseUrl;
    this.#keys = lockKeys(identity);
  }

  get held(): boolean {
    return this.#client !== null;
  }

  /** One attempt; true when this process now leads. */
  async tryAcquire(events: LeaderEvents): Promise<boolean> {
    if (this.#client) return true;
    const client = primaryClient(this.#databaseUrl, {
      application_name: 'settle-reporting-leader',
      keepAlive: true,
      connectionTimeoutMillis: LOCK_CONNECTION_TIMEOUT_MS,
      query_timeout: LOCK_CONNECTION_TIMEOUT_MS,
    });
    client.on('error', () => {});
    await client.connect();
    try {
      if (!(await tryAdvisoryLock(client, this.#keys))) {
        await client.end();
        return false;
      }
      await listenOn(client, CHANGES_CHANNEL);
      await listenOn(client, WAKE_CHANNEL);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    client.on('notification', (message) => events.onNotify(message.channel));
    // release() forgets the client before ending it, so only a loss nobody asked for is reported.
    const lost = (error: Error) => {
      if (this.#client !== client) return;
      this.#client = null;
      // A connection that merely stopped answering may still hold the lock in Postgres: close it.
      client.end().catch(() => {});
      events.onLost(error);
    };
    client.on('error', lost);
    client.on('end', () => lost(new Error('leader lock connection ended')));
    this.#client = client;
    return true;
  }

  /** A round trip on the lock's connection, so a dead connection is noticed (and leadership given up). */
  async check(): Promise<void> {
    const client = this.#client;
    if (!client) return;
    try {
      await pingConnection(client);
    } catch (error) {
      client.emit('error', error);
    }
  }

  async release(): Promise<void> {
    const client = this.#client;
    this.#client = null;
    if (client) await client.end().catch(() => {});
  }
}
