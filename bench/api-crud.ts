/**
 * `npm run bench:api-crud`: Settle's create-customer and get-by-id throughput and latency next to
 * an anchor (bench/anchor-server.ts: a bare Koa app doing one INSERT / one SELECT by primary key on
 * the same table with a pg.Pool of Settle's default size).
 *
 * Postgres as in `npm test`: DATABASE_URL when set, else an embedded server in a temp dir. A fresh
 * database is created, migrated and dropped afterwards. Settle's web process and the anchor each
 * run in a child process, so neither shares an event loop with the load generator (autocannon).
 * The shared machinery is in bench/harness.ts.
 *
 * Env: BENCH_SECONDS (per scenario and server, default 10), BENCH_WARMUP_SECONDS (default 2),
 * BENCH_CONNECTIONS (default 32), BENCH_PROFILE=1 (CPU profiles of both servers in
 * bench/results/profiles). Results: the table on stdout, JSON in bench/results/api-crud.json.
 */
import { cleanup, measure, report, SERVER_NAMES, startServers, summarize, type Scenario, type Target, type Targets } from './harness.ts';

const GET_IDS = 16;
const TARGETS: Targets = { ratio: 0.6, p99Ms: 50 };

const { servers, headers } = await startServers('api-crud');
const customerBody = JSON.stringify({ name: 'Bench Customer', email: 'bench@example.com' });

// Ids for get-by-id, made through Settle (same org and environment, so both servers can read them).
const ids: string[] = [];
for (let i = 0; i < GET_IDS; i += 1) {
  const response = await fetch(`${servers.settle}/customers`, { method: 'POST', headers, body: JSON.stringify({ name: `Get ${i}`, email: `get${i}@example.com` }) });
  const body = (await response.json()) as { id?: string };
  if (response.status !== 200 || !body.id) throw new Error(`setup create failed: ${response.status} ${JSON.stringify(body)}`);
  ids.push(body.id);
}
for (const name of SERVER_NAMES) {
  const response = await fetch(`${servers[name]}/customers/${ids[0]}`, { headers });
  if (response.status !== 200) throw new Error(`${name}: GET /customers/${ids[0]} answered ${response.status}`);
}

// Both servers get the same requests.
const same = (target: Target) => ({ settle: target, anchor: target });
const scenarios: Scenario[] = [
  { name: 'create-customer', targets: same({ path: '/customers', options: { method: 'POST', headers, body: customerBody } }) },
  // Each connection cycles through the ids.
  { name: 'get-by-id', targets: same({ path: '', options: { requests: ids.map((id) => ({ method: 'GET', path: `/customers/${id}`, headers })) } }) },
];

const measurements = await measure(servers, scenarios);
report('api-crud', measurements, summarize(scenarios, measurements, TARGETS), TARGETS);

await cleanup();
process.exit(0);
