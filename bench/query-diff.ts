/**
 * The differential tier at scale: many thousands of random valid queries (test/query-diff.ts)
 * over a seeded dataset, each answered by the Postgres compiler and by the ClickHouse compiler
 * over the mirror, and every third recounted from the rows the Postgres list shows. Prints the
 * seed, progress, the first disagreement in full, and the counts; exits 1 on any disagreement.
 *
 * Env: QUERY_DIFF_SEED (default: from the clock), QUERY_DIFF_QUERIES (default 10000),
 * QUERY_DIFF_ROWS (transactions, default 3000), QUERY_DIFF_CONCURRENCY (queries in flight, default 4),
 * DATABASE_URL (else an embedded Postgres).
 * `QUERY_DIFF_SEED=<seed> npm run bench:query-diff` replays a run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../api/config.ts';
import { createDb, rows } from '../api/db/connection.ts';
import { collectionByPath } from '../api/families/index.ts';
import { createLogger } from '../api/logger.ts';
import { parseSnapshot } from '../reporting/feed.ts';
import { Mirror } from '../reporting/mirror.ts';
import { openStore } from '../reporting/store.ts';
import { compareQuery, compareRecount, Dataset, inliningDb, QueryGenerator, Random, TENANTS, type Comparison, type Paths, type Verdict } from '../test/query-diff.ts';
import { benchDatabase, cleanup, positive } from './harness.ts';

const SEED = Number(process.env.QUERY_DIFF_SEED ?? Date.now() % 1_000_000);
const QUERIES = positive('QUERY_DIFF_QUERIES', 10_000);
const ROWS = positive('QUERY_DIFF_ROWS', 3000);
const CONCURRENCY = positive('QUERY_DIFF_CONCURRENCY', 4);

console.log(`bench:query-diff seed ${SEED}, ${QUERIES} queries over ${ROWS} transactions (load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')})`);
const databaseUrl = await benchDatabase();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-query-diff-'));
const db = createDb(databaseUrl, CONCURRENCY + 2);
const store = openStore(loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: dataDir }));
const mirror = new Mirror(db, store, createLogger('silent', 'reporting'), { pollIntervalMs: 200, batchIntervalMs: 20, rollupRefreshMs: 600_000 });

const r = new Random(SEED);
const generator = new QueryGenerator(r);
const counts: Record<Verdict, number> = { agreed: 0, bothRefused: 0, pgFailedChRefused: 0, disagreed: 0 };
let recounts = 0;
let first: { index: number; result: Comparison } | null = null;
const started = Date.now();

try {
  await new Dataset(r).insert(db, ROWS);
  await mirror.start();
  const [{ p }] = await rows<{ p: string }>(db, 'select pg_current_snapshot()::text as p');
  if (!(await mirror.waitFor(parseSnapshot(p)!, 60_000, { rollup: true }))) throw new Error('the mirror did not catch up in 60 s');
  const paths: Paths = { pg: inliningDb(db), store, collection: collectionByPath.get('transactions')! };
  const note = (result: Comparison, index: number) => {
    counts[result.verdict] += 1;
    if (result.verdict === 'disagreed' && (!first || index < first.index)) {
      first = { index, result };
      console.log(`disagreement, query #${index} (seed ${SEED}):\n${JSON.stringify(result.detail, null, 2)}`);
    }
  };
  // Each query and its recount are drawn in index order as a lane takes the index, so a seed
  // names the same queries whatever CONCURRENCY is; the lanes overlap their waits on Postgres.
  let nextIndex = 0;
  let done = 0;
  const lane = async () => {
    while (nextIndex < QUERIES) {
      const i = nextIndex;
      nextIndex += 1;
      const query = [r.pick(TENANTS), generator.query()] as const;
      const recount = i % 3 === 0 ? [r.pick(TENANTS), generator.recount()] as const : null;
      note(await compareQuery(paths, ...query), i);
      if (recount) {
        recounts += 1;
        note(await compareRecount(paths, ...recount), i);
      }
      done += 1;
      if (done % 1000 === 0) console.log(`${done} queries, ${counts.disagreed} disagreements, ${((Date.now() - started) / 1000).toFixed(0)} s`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
} finally {
  await mirror.stop();
  await store.close();
  await db.destroy();
  fs.rmSync(dataDir, { recursive: true, force: true });
  await cleanup();
}

console.log(`seed ${SEED}: ${QUERIES} queries and ${recounts} list recounts in ${((Date.now() - started) / 1000).toFixed(0)} s (load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}): `
  + `agreed ${counts.agreed}, both refused ${counts.bothRefused}, Postgres failed and ClickHouse refused ${counts.pgFailedChRefused}, disagreed ${counts.disagreed}`);
const lowest = first as { index: number; result: Comparison } | null;
if (lowest) console.log(`first disagreement by index: query #${lowest.index} (seed ${SEED}):\n${JSON.stringify(lowest.result.detail, null, 2)}`);
process.exitCode = counts.disagreed ? 1 : 0;
