/**
 * A DATABASE_URL may name several hosts, `postgres://u:p@h1:5432,h2:5433/db`, as libpq's do: a
 * primary and its standbys. Connections go to the one that accepts writes, found as libpq's
 * `target_session_attrs=read-write` finds it (each host in turn, asked `transaction_read_only`),
 * and found again when it is lost: after a failover every process follows the promoted standby
 * without a restart. node-postgres takes one host; this module gives it the right one.
 *
 * With one host nothing is asked: the host is the database, whatever it says. Either way every
 * connection notices a host that falls silent (silence.ts).
 */
import pg from 'pg';
import { connectWatched } from './silence.ts';

interface SplitUrl {
  /** `postgres://` */
  scheme: string;
  /** `user:password@`, or empty */
  userinfo: string;
  /** `host:port` each, IPv6 hosts in brackets */
  hosts: string[];
  /** `/db?params`, or empty */
  rest: string;
}

const URL_PARTS = /^([a-z][a-z0-9+.-]*:\/\/)(?:([^@/?#]*)@)?([^/?#]*)(.*)$/i;

function split(url: string): SplitUrl | null {
  const parts = URL_PARTS.exec(url);
  if (!parts) return null;
  return { scheme: parts[1], userinfo: parts[2] === undefined ? '' : `${parts[2]}@`, hosts: parts[3].split(','), rest: parts[4] };
}

/** One URL per host the connection string names, in its order (the URL itself when it names one, or is no URL). */
export function hostUrls(url: string): string[] {
  const parts = split(url);
  if (!parts || parts.hosts.length < 2) return [url];
  return parts.hosts.map((host) => `${parts.scheme}${parts.userinfo}${host}${parts.rest}`);
}

/**
 * `edit` applied to the URL's credentials, path and parameters with WHATWG URL, which refuses a
 * list of hosts: they are set aside and put back.
 */
export function editDatabaseUrl(url: string, edit: (parsed: URL) => void): string {
  const parts = split(url);
  if (!parts || parts.hosts.length < 2) {
    const parsed = new URL(url);
    edit(parsed);
    return parsed.toString();
  }
  const parsed = new URL(`${parts.scheme}${parts.userinfo}settle-hosts${parts.rest}`);
  edit(parsed);
  return parsed.toString().replace('settle-hosts', parts.hosts.join(','));
}

/** Asked of a freshly connected session: whether it may write (libpq asks the same). */
const READ_ONLY_SQL = `select current_setting('transaction_read_only') = 'on' or pg_is_in_recovery() as read_only`;
/** How long a host that does not answer may hold up the search for the primary. */
const PROBE_TIMEOUT_MS = 5000;

function readOnlyError(url: string): Error {
  return Object.assign(new Error(`The database host ${hostOf(url)} accepts no writes`), { code: '25006' });
}

function noPrimaryError(url: string): Error {
  return Object.assign(new Error(`No host of the database URL accepts writes (${databaseHosts(url).join(', ')})`), { code: '08001' });
}

function hostOf(url: string): string {
  return split(url)?.hosts.join(',') ?? 'unknown';
}

/** The `host:port` of each host the connection string names, in its order: what a log names for it, without its credentials. */
export function databaseHosts(url: string): string[] {
  return split(url)?.hosts ?? ['unknown'];
}

async function readOnly(client: pg.Client): Promise<boolean> {
  return (await client.query(READ_ONLY_SQL)).rows[0].read_only === true;
}

/** The writable host of one multi-host URL: remembered until a connection to it fails or finds it read-only. */
class PrimaryLocator {
  readonly #url: string;
  readonly #hosts: string[];
  #current: string | null = null;
  #search: Promise<string> | null = null;

  constructor(url: string) {
    this.#url = url;
    this.#hosts = hostUrls(url);
  }

  get several(): boolean {
    return this.#hosts.length > 1;
  }

  primary(): Promise<string> {
    if (this.#current) return Promise.resolve(this.#current);
    this.#search ??= this.#find().finally(() => {
      this.#search = null;
    });
    return this.#search;
  }

  /** A connection to `host` failed, or it accepts no writes: the next connection looks again. */
  lost(host: string): void {
    if (this.#current === host) this.#current = null;
  }

  async #find(): Promise<string> {
    for (const host of this.#hosts) {
      const client = new pg.Client({ connectionString: host, application_name: 'settle-primary-probe', connectionTimeoutMillis: PROBE_TIMEOUT_MS });
      client.on('error', () => {});
      try {
        await client.connect();
        if (!(await readOnly(client))) return (this.#current = host);
      } catch {
        // down, starting or refusing us: the next host may be the primary
      } finally {
        await client.end().catch(() => {});
      }
    }
    throw noPrimaryError(this.#url);
  }
}

const locators = new Map<string, PrimaryLocator>();

function locatorFor(url: string): PrimaryLocator {
  let locator = locators.get(url);
  if (!locator) locators.set(url, locator = new PrimaryLocator(url));
  return locator;
}

/** The single-host URL of the host accepting writes now (the URL itself when it names one host). */
export async function primaryUrl(url: string): Promise<string> {
  const locator = locatorFor(url);
  return locator.several ? locator.primary() : url;
}

/** Tells the locator of `url` that its primary was lost (a read-only answer where a write was meant). */
export function primaryLost(url: string): void {
  const locator = locators.get(url);
  if (!locator?.several) return;
  void locator.primary().then((host) => locator.lost(host), () => {});
}

type ConnectCallback = (error: Error) => void;

/**
 * The pg.Client every connection of `url` is made with: each connect() is watched for a silent
 * host (silence.ts), and for a multi-host URL goes to the host accepting writes now, checks it
 * still does, and tells the locator when it does not or cannot be reached.
 */
function clientClass(url: string): typeof pg.Client {
  const hosts = hostUrls(url);
  const locator = hosts.length > 1 ? locatorFor(url) : null;
  return class SettleClient extends pg.Client {
    constructor(config: pg.ClientConfig = {}) {
      super({ ...config, connectionString: hosts[0] });
      // connect() hands the connection over a few promise steps after pg has it, and a server
      // shutting down may send its FATAL in the same packet as the ready-for-query: pg emits that
      // as 'error' before the pool (or caller) has attached its listener, which would crash the
      // process. The broken connection fails its next query instead, as any dropped one does.
      this.on('error', () => {});
    }

    override connect(): Promise<pg.Client>;
    override connect(callback: ConnectCallback): void;
    override connect(callback?: ConnectCallback): Promise<pg.Client> | void {
      const connected = (locator ? this.#connectToPrimary(locator) : connectWatched(this, url, hostOf(url), () => super.connect())).then(() => this);
      if (!callback) return connected;
      connected.then(() => callback(undefined as unknown as Error), (error: Error) => callback(error));
    }

    async #connectToPrimary(locator: PrimaryLocator): Promise<void> {
      const host = await locator.primary();
      const target = new pg.Client({ connectionString: host });
      // The target's host and port, parsed as pg parses them, replace those of the first host.
      this.host = target.host;
      this.port = target.port;
      Object.assign((this as unknown as { connectionParameters: object }).connectionParameters, { host: target.host, port: target.port });
      this.on('error', () => locator.lost(host));
      try {
        await connectWatched(this, host, hostOf(host), () => super.connect());
      } catch (error) {
        locator.lost(host);
        throw error;
      }
      if (await readOnly(this)) {
        locator.lost(host);
        await this.end().catch(() => {});
        throw readOnlyError(host);
      }
    }
  };
}

/** `new pg.Client(config)` on the host of `url` that accepts writes. */
export function primaryClient(url: string, config: Omit<pg.ClientConfig, 'connectionString'> = {}): pg.Client {
  const SettleClient = clientClass(url);
  return new SettleClient(config);
}

/** `new pg.Pool(config)` whose connections go to the host of `url` that accepts writes. */
export function primaryPool(url: string, config: Omit<pg.PoolConfig, 'connectionString'> = {}): pg.Pool {
  return new pg.Pool({ ...config, Client: clientClass(url) });
}
