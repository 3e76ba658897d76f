/**
 * The locks that keep a test environment's reset (api/testData.ts) apart from the environment's
 * requests (api/tenantGate.ts). Two advisory locks per tenant, keyed by a 64-bit hash of its
 * name, so tenants never share one:
 *
 * - `requests`: held shared while requests of the tenant run, exclusively by a reset;
 * - `reset`: held exclusively by a reset for its whole transaction, taken before it queues for
 *   `requests`.
 *
 * The web process holds `requests` on one dedicated connection for all its tenants (a session
 * lock counts its holders, so holds of several tenants and several holds of one tenant live side
 * by side). A session that already holds a lock is granted it again without queueing behind a
 * waiting reset, so a new hold first takes `reset` shared for the one statement: a reset that is
 * waiting or running refuses it, and the reset waits only for the holds already given out.
 */
import net from 'node:net';
import pg from 'pg';
import { rows, type Db } from './connection.ts';
import { primaryClient } from './primary.ts';
import type { Tenant } from './tenant.ts';

/** A dedicated connection with no holds is closed after this long. */
const IDLE_CLOSE_MS = 30_000;

function requestsLock(tenant: Tenant): string {
  return `settle.tenant_requests:${tenant.orgId}/${tenant.environment}`;
}

function resetLock(tenant: Tenant): string {
  return `settle.tenant_reset:${tenant.orgId}/${tenant.environment}`;
}

/** One holder's share of a tenant's `requests` lock. */
export interface SharedHold {
  /** true once the connection holding it is gone (Postgres released the lock with it) */
  readonly lost: boolean;
  /** gives the share back (once; later calls do nothing) */
  release(): void;
}

/** The web process's connection that holds tenants' `requests` locks shared. */
export class TenantLockSession {
  readonly #connectionString: string;
  #client: pg.Client | null = null;
  #connecting: Promise<pg.Client> | null = null;
  #holds = 0;
  #idleTimer: NodeJS.Timeout | null = null;
  /** the statement last sent: a pg client runs one at a time, and a release is not awaited by its caller */
  #last: Promise<unknown> = Promise.resolve();

  constructor(connectionString: string) {
    this.#connectionString = connectionString;
  }

  /** A share of the tenant's `requests` lock, or null while a reset of the tenant waits or runs. */
  async tryShare(tenant: Tenant): Promise<SharedHold | null> {
    const client = await this.#connect();
    try {
      return await this.#tryShareOn(client, tenant);
    } catch {
      // A connection that broke while idle (a database restart) is noticed only when used: once more on a new one.
      void this.#forget(client);
      return this.#tryShareOn(await this.#connect(), tenant);
    }
  }

  async #tryShareOn(client: pg.Client, tenant: Tenant): Promise<SharedHold | null> {
    const result = await this.#query<{ held: boolean }>(client,
      `select case when pg_try_advisory_xact_lock_shared(hashtextextended($1, 0))
                   then pg_try_advisory_lock_shared(hashtextextended($2, 0))
                   else false end as held`,
      [resetLock(tenant), requestsLock(tenant)]);
    if (!result.rows[0].held) return null;
    return this.#hold(client, tenant);
  }

  /** Sends `sql` once the statements sent before it have finished. */
  #query<R extends pg.QueryResultRow>(client: pg.Client, sql: string, params: unknown[]): Promise<pg.QueryResult<R>> {
    const sent = this.#last.then(() => client.query<R>(sql, params));
    this.#last = sent.catch(() => {});
    return sent;
  }

  /** Closes the connection, which releases every hold on it. */
  async close(): Promise<void> {
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    if (this.#client) await this.#forget(this.#client);
  }

  async #forget(client: pg.Client): Promise<void> {
    if (this.#client === client) this.#client = null;
    await client.end().catch(() => {});
  }

  #hold(client: pg.Client, tenant: Tenant): SharedHold {
    this.#holds += 1;
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    let released = false;
    const session = this;
    return {
      get lost() {
        return session.#client !== client;
      },
      release() {
        if (released) return;
        released = true;
        if (session.#client === client) {
          session.#query(client, 'select pg_advisory_unlock_shared(hashtextextended($1, 0))', [requestsLock(tenant)]).catch(() => {});
        }
        if (--session.#holds === 0) session.#closeWhenIdle();
      },
    };
  }

  #closeWhenIdle(): void {
    this.#idleTimer = setTimeout(() => {
      if (this.#holds === 0) void this.close();
    }, IDLE_CLOSE_MS);
    this.#idleTimer.unref();
  }

  async #connect(): Promise<pg.Client> {
    if (this.#client) return this.#client;
    this.#connecting ??= this.#open().finally(() => {
      this.#connecting = null;
    });
    return this.#connecting;
  }

  async #open(): Promise<pg.Client> {
    const client = primaryClient(this.#connectionString, {
      application_name: 'settle-tenant-locks',
      keepAlive: true,
      // Holds live only while requests run, and a stopping web process drains its requests first:
      // the connection itself never keeps the process alive.
      stream: () => {
        const socket = new net.Socket();
        socket.unref();
        return socket;
      },
    });
    const gone = () => {
      if (this.#client === client) this.#client = null;
    };
    client.on('error', gone);
    client.on('end', gone);
    await client.connect();
    this.#client = client;
    return client;
  }
}

/** Resolves once no reset of the tenant waits or runs (on a pool connection, for as long as that takes). */
export async function awaitTenantReset(db: Db, tenant: Tenant): Promise<void> {
  await db.transaction((tx) => rows(tx, 'select pg_advisory_xact_lock_shared(hashtextextended(?, 0))', [resetLock(tenant)]));
}

/**
 * In the reset's transaction: first `reset` (new holds are refused from here on), then `requests`
 * exclusively, granted once every request of the tenant that holds it has finished. A wait for
 * any lock of the transaction longer than `timeoutMs` fails it (SQLSTATE 55P03).
 */
export async function lockTenantForReset(tx: Db, tenant: Tenant, timeoutMs: number): Promise<void> {
  await rows(tx, `select set_config('lock_timeout', ?, true)`, [`${timeoutMs}ms`]);
  await rows(tx, 'select pg_advisory_xact_lock(hashtextextended(?, 0))', [resetLock(tenant)]);
  await rows(tx, 'select pg_advisory_xact_lock(hashtextextended(?, 0))', [requestsLock(tenant)]);
}
