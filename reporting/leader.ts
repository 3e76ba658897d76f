/**
 * Who mirrors: a Postgres session-level advisory lock per ClickHouse target. The holder keeps one
 * dedicated connection open for as long as it leads; when that process dies or its connection
 * drops, Postgres releases the lock and a standby's next attempt takes it over. The same
 * connection LISTENs for change notifications and for wake-ups from standbys.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { listenOn, pingConnection, tryAdvisoryLock } from './repository.ts';

export const CHANGES_CHANNEL = 'reporting_changes';
export const WAKE_CHANNEL = 'reporting_wake';

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
  #released = false;

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
    const client = new pg.Client({ connectionString: this.#databaseUrl, application_name: 'settle-reporting-leader', keepAlive: true });
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
    const lost = (error: Error) => {
      if (this.#client !== client || this.#released) return;
      this.#client = null;
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
    this.#released = true;
    const client = this.#client;
    this.#client = null;
    if (client) await client.end().catch(() => {});
  }
}
