/**
 * `node bench/db-layer.ts`: the database layer alone (api/db/connection.ts), without HTTP: the
 * statements a create-customer request (a transaction around one INSERT … RETURNING) and a
 * get-by-id request (one SELECT by primary key) send, run by BENCH_CONNECTIONS concurrent loops
 * over one handle with Settle's default pool of 10. Prints operations per second and this
 * process's CPU ms per operation (the figure that moves least with the machine's load).
 *
 * To compare two versions of the layer, point DB_LAYER_ROOT at another checkout of the repo (a
 * copy with its own api/db/); the runs alternate between the roots given, comma-separated.
 *
 * Env: DATABASE_URL (a server; a database is created and dropped), DB_LAYER_ROOT (default: this
 * repo), BENCH_SECONDS (per workload and run, default 5), BENCH_CONNECTIONS (default 32),
 * BENCH_ROUNDS (default 3).
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../api/config.ts';
import { adminQuery, databaseUrl } from '../api/db/admin.ts';
import { migrate } from '../api/db/migrate.ts';
import { newId } from '../api/ids.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ORG = 'org_dblayerbench0000000000';

const INSERT = `insert into accounts (id, org_id, environment, type, data)
     select id, ?, ?, type, data from unnest(?::text[], ?::text[], ?::jsonb[]) with ordinality as r(id, type, data, n)
     order by n
     returning id, type, data, created_at, modified_at`;
const SELECT = 'select id, type, data, created_at, modified_at from accounts where id = ? and org_id = ? and environment = ? and type = ?';
const DATA = JSON.stringify({ name: 'Bench Customer', email: 'bench@example.com' });

interface Figure {
  workload: string;
  opsPerSec: number;
  cpuMsPerOp: number;
  load1: number;
}

/** One run in this process: both workloads through the layer under `root`. */
async function runOnce(root: string, url: string): Promise<Figure[]> {
  const { createDb, rows } = (await import(path.join(root, 'api/db/connection.ts'))) as typeof import('../api/db/connection.ts');
  const db = createDb(url, 10);
  const ids = (await rows<{ id: string }>(db, 'select id from accounts where org_id = ? limit 64', [ORG])).map((r) => r.id);
  const create = () => db.transaction((tx) => rows(tx, INSERT, [ORG, 'test', [newId('acct')], ['customer'], [DATA]]));
  let next = 0;
  const get = () => rows(db, SELECT, [ids[next++ % ids.length], ORG, 'test', 'customer']);
  const figures: Figure[] = [];
  for (const [workload, op] of [['create-customer', create], ['get-by-id', get]] as const) {
    await loop(op, 1); // warm-up
    const cpu = process.cpuUsage();
    const started = performance.now();
    const count = await loop(op, SECONDS);
    const elapsed = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    figures.push({ workload, opsPerSec: Math.round(count / elapsed), cpuMsPerOp: Math.round(((used.user + used.system) / 1000 / count) * 1000) / 1000, load1: os.loadavg()[0] });
  }
  await db.destroy();
  return figures;
}

async function loop(op: () => Promise<unknown>, seconds: number): Promise<number> {
  const until = performance.now() + seconds * 1000;
  let count = 0;
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (performance.now() < until) {
      await op();
      count += 1;
    }
  }));
  return count;
}

if (process.env.DB_LAYER_CHILD) {
  console.log(JSON.stringify(await runOnce(process.env.DB_LAYER_CHILD, process.env.DB_LAYER_URL!)));
} else {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) throw new Error('DATABASE_URL is not set (a server to create the benchmark database on)');
  const roots = (process.env.DB_LAYER_ROOT ?? projectRoot).split(',');
  const database = `settle_dblayer_${process.pid}`;
  await adminQuery(serverUrl, `create database ${database}`);
  const url = databaseUrl(serverUrl, database);
  try {
    await migrate(url);
    await adminQuery(url, `insert into orgs (id, name) values ('${ORG}', 'db-layer bench')`);
    await adminQuery(url, `insert into accounts (id, org_id, environment, type, data)
      select 'acct_seed' || g, '${ORG}', 'test', 'customer', '${DATA}'::jsonb from generate_series(1, 10000) g`);
    console.log(`db-layer: ${CONNECTIONS} concurrent loops, pool 10, ${SECONDS} s per workload, Node ${process.version}, ${os.cpus().length} CPUs`);
    console.log('round  root                          workload          ops/s  CPU ms/op  load');
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const root of roots) {
        // Each run in a fresh process, so neither layer warms the other's JIT or pool.
        const child = spawnSync(process.execPath, [path.join(projectRoot, 'bench/db-layer.ts')], { env: { ...process.env, DB_LAYER_CHILD: root, DB_LAYER_URL: url }, encoding: 'utf8' });
        if (child.status !== 0) throw new Error(`run under ${root} failed: ${child.stderr}`);
        for (const f of JSON.parse(child.stdout) as Figure[]) {
          console.log(`${String(round).padEnd(5)}  ${root.padEnd(28)}  ${f.workload.padEnd(15)}  ${String(f.opsPerSec).padStart(6)}  ${f.cpuMsPerOp.toFixed(3).padStart(9)}  ${f.load1.toFixed(2)}`);
        }
      }
    }
  } finally {
    await adminQuery(serverUrl, `drop database if exists ${database} with (force)`);
  }
}
