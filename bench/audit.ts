/**
 * `npm run bench:audit`: what the audit history and the request log cost, each beside the same
 * Settle without the feature, in the same run:
 * - create customer, a card payment (POST /transactions with an inline card) and update customer
 *   (PUT /customers/:id renaming it) audited, and with the audit triggers disabled (which turns
 *   off the audit of those changes however they are written), on the same web process (goal: at
 *   most 10 % slower), rounds alternated (their order reversed every other round) so the
 *   neighbours' load falls on all alike. The goal is judged on the CPU per request of the web
 *   process plus the backends of the bench's own database (where the audit rows are built): the
 *   median of the rounds' ratios, each of two runs side by side. On a shared 2-core machine req/s
 *   moved between runs of the same code by more than the goal, that CPU figure less (it still
 *   moves with the neighbours' load: more rounds, BENCH_ROUNDS, steady it). req/s is shown beside
 *   it, and Postgres's CPU counted whole too (on a server shared with other work, it counts the others').
 *   The card payment and the update are also measured audited by the trigger instead of their own statement, on a
 *   second web process (SETTLE_AUDIT_BY=trigger). The web process builds the events on both sides
 *   (the trigger being disabled is the database's to know): that work is timed apart and counted
 *   against the audit beside the CPU figures;
 * - get-by-id (GET /customers/:id) on a web process that logs every request to the reporting
 *   process, and on one that logs none (REPORTING_URL=off) (goal: at most 5 % slower);
 * - request-log ingestion into the reporting store: batches of 10,000 rows posted by 4 senders, as
 *   web processes ship them (goal: at least 20,000 rows/s).
 *
 * The audit comparison runs at each tenant size of BENCH_ROWS (default 10k, then 1M): the tenant
 * is grown by SQL to that many customers and that many audit events (as the API writes them),
 * before the size's rounds. Ingestion is timed into a store already holding each size of rows.
 *
 * Postgres as in `npm test`; BENCH_ROUNDS alternated rounds per comparison (default 4); BENCH_PARTS
 * the comparisons to run (audit, log, ingest; default all); BENCH_SCENARIOS the audit scenarios to run
 * (create, payment, update; default all three). Results:
 * the table on stdout, JSON in bench/results/audit.json.
 */
// @ts-ignore -- autocannon ships no type declarations
import autocannon from 'autocannon';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb } from '../api/db/connection.ts';
import type { StoredObject } from '../api/db/storedRow.ts';
import { createdAudit } from '../api/db/auditStatement.ts';
import { newId } from '../api/ids.ts';
import { REQUEST_LOG_SHIPPED, storedLogTime, type RequestLogTuple } from '../api/families/request_logs/family.ts';
import { freePort } from '../api/db/embedded.ts';
import { CONNECTIONS, SECONDS, WARMUP_SECONDS, cleanup, dataSizes, growTenant, positive, resultsDir, startChild, startServers, waitForHttp } from './harness.ts';
import { REPORTING_AUTH } from './reportingAuth.ts';
import { chdbBenchDir } from './chdbDir.ts';

/** BENCH_ROUNDS: alternated rounds per comparison (default 4); the medians of more beat a noisy machine. */
const ROUNDS = positive('BENCH_ROUNDS', 4);
/** BENCH_PARTS: which comparisons run, of audit,log,ingest (default all three). */
const PARTS = new Set((process.env.BENCH_PARTS ?? 'audit,log,ingest').split(',').map((part) => part.trim()));
/** BENCH_SCENARIOS: which audit scenarios run, of create,payment,update (default all three); the tenant is grown before the first. */
const SCENARIOS = new Set((process.env.BENCH_SCENARIOS ?? 'create,payment,update').split(',').map((scenario) => scenario.trim()));
const AUDITED = ['accounts', 'billing_charges', 'billing_schedules', 'entities', 'intents', 'invoice_items', 'invoices', 'payment_activations',
  'payment_links', 'payment_methods', 'stakeholders', 'transactions', 'webhooks', 'api_keys'];

const reportingPort = await freePort();
const chDir = chdbBenchDir();
const { headers, databaseUrl, key } = await startServers('audit');
const reporting = startChild('audit', 'reporting', 'reporting/main.ts', { DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: chDir, REPORTING_PORT: String(reportingPort), LOG_LEVEL: 'warn' });
await waitForHttp(`http://127.0.0.1:${reportingPort}/healthz`, reporting);
const unloggedPort = await freePort();
const unlogged = startChild('audit', 'settle web, no request log', 'api/server.ts', {
  DATABASE_URL: databaseUrl, PORT: String(unloggedPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn', SETTLE_RATE_LIMIT: 'off', REPORTING_URL: 'off',
});
const plain = `http://127.0.0.1:${unloggedPort}`;
await waitForHttp(`${plain}/healthz`, unlogged);
// The logging web process is started the same way, right after: the harness's own web process
// (started first, beside its anchor), with neither logging, served get-by-id 4.5 % slower than
// one started so (4 alternated rounds, load 1.6-1.8), which had been counted against the log.
// Most of such gaps were a second-started process's young generation (api/process.ts).
const loggedPort = await freePort();
const loggedChild = startChild('audit', 'settle web, request log', 'api/server.ts', {
  DATABASE_URL: databaseUrl, PORT: String(loggedPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn', SETTLE_RATE_LIMIT: 'off', REPORTING_URL: `http://127.0.0.1:${reportingPort}`,
});
const withLog = `http://127.0.0.1:${loggedPort}`;
await waitForHttp(`${withLog}/healthz`, loggedChild);
const byTriggerPort = await freePort();
const byTrigger = startChild('audit', 'settle web, audit by trigger', 'api/server.ts', {
  DATABASE_URL: databaseUrl, PORT: String(byTriggerPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn', SETTLE_RATE_LIMIT: 'off', REPORTING_URL: 'off', SETTLE_AUDIT_BY: 'trigger',
});
const triggered = `http://127.0.0.1:${byTriggerPort}`;
await waitForHttp(`${triggered}/healthz`, byTrigger);
// The audit scenarios run on a process of their own, so the two get-by-id processes have served the same.
const auditingPort = await freePort();
const auditing = startChild('audit', 'settle web, audit', 'api/server.ts', {
  DATABASE_URL: databaseUrl, PORT: String(auditingPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn', SETTLE_RATE_LIMIT: 'off', REPORTING_URL: 'off',
});
const audit = `http://127.0.0.1:${auditingPort}`;
await waitForHttp(`${audit}/healthz`, auditing);
const db = createDb(databaseUrl, 2);

async function setAudit(on: boolean): Promise<void> {
  const verb = on ? 'enable' : 'disable';
  for (const table of AUDITED) {
    await db.raw(`alter table ${table} ${verb} trigger ${table}_audit_insert, ${verb} trigger ${table}_audit_update, ${verb} trigger ${table}_audit_delete`);
  }
}

/** The fields of /proc/<pid>/stat after the command name: [0] state, [1] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime. */
function statFields(pid: number | string): string[] {
  return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
}

/** CPU ms (user + system) a process has used so far, from /proc (USER_HZ 100). */
function cpuMs(pid: number): number {
  const fields = statFields(pid);
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * CPU ms Postgres has used so far: the postmaster, its live children (backends, WAL writer,
 * checkpointer, autovacuum) and the children it has reaped. Every database of the server counts:
 * the embedded one the bench starts serves only the bench.
 */
function postgresCpuMs(postmaster: number): number {
  const own = statFields(postmaster);
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = statFields(entry);
      if (Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // the process ended meanwhile
    }
  }
  return ticks * 10;
}

/**
 * CPU ms used so far by the client backends of the bench's own database: on a server shared with
 * other databases' work, `postgresCpuMs` counts theirs too. Autovacuum's workers are left to that
 * whole figure: they come when they will, and the run one falls in would count all its work.
 * Each backend's last reading is kept, so one that ends still counts what it used until it
 * was last seen.
 */
const ownBackends = new Map<number, number>();
async function ownBackendsCpuMs(): Promise<number> {
  const found = await db.raw(`select pid from pg_stat_activity where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()`);
  for (const { pid } of found.rows as Array<{ pid: number }>) {
    try {
      const fields = statFields(pid);
      ownBackends.set(pid, (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // the backend ended meanwhile
    }
  }
  return [...ownBackends.values()].reduce((a, b) => a + b, 0);
}

/** `meters`: cumulative CPU ms of what is measured per request (the web process, reporting, Postgres). */
async function load(url: string, options: Record<string, unknown>, meters: Array<() => number | Promise<number>> = []): Promise<{ reqPerSec: number; p99Ms: number; bad: number; cpuMsPerRequest: number[] }> {
  const go = (duration: number) => autocannon({ url, connections: CONNECTIONS, duration, timeout: 10, ...options });
  if (WARMUP_SECONDS > 0) await go(WARMUP_SECONDS);
  const cpuBefore = await Promise.all(meters.map((meter) => meter()));
  const result = await go(SECONDS);
  const cpuAfter = await Promise.all(meters.map((meter) => meter()));
  const cpuMsPerRequest = meters.map((_, i) => (result.requests.total ? (cpuAfter[i]! - cpuBefore[i]!) / result.requests.total : 0));
  return { reqPerSec: result.requests.average, p99Ms: result.latency.p99, bad: result.non2xx + result.errors, cpuMsPerRequest };
}

/**
 * A process's first measured round ran slower than its later ones (its code still being compiled),
 * which favoured whichever side came second: each server takes this much load, unmeasured, before
 * the rounds of a scenario.
 */
const FIRST_WARMUP_SECONDS = 5;
async function warmUp(url: string, options: Record<string, unknown>): Promise<void> {
  await autocannon({ url, connections: CONNECTIONS, duration: FIRST_WARMUP_SECONDS, timeout: 10, ...options });
}

interface Row {
  scenario: string;
  feature: number;
  without: number;
  slowerPercent: number;
  /** the same of the rounds' medians, which one round disturbed by a neighbour moves less */
  medianSlowerPercent: number;
  /**
   * How much more CPU a request took with the feature (web plus the bench database's backends),
   * where measured: the median of the rounds' own ratios, each of two runs side by side, so a
   * drift of the neighbours' load over the rounds falls on both terms of each. The goal is judged
   * on it, else on `slowerPercent`.
   */
  cpuMorePercent?: number;
  goalPercent: number;
  bad: number;
}

/** Whether a row meets its goal: its CPU figure when it has one, else its req/s. */
const passes = (r: Row) => (r.cpuMorePercent ?? r.slowerPercent) <= r.goalPercent;

const meanOf = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const medianOf = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const slower = (feature: number, without: number) => Math.round((1 - feature / without) * 1000) / 10;

function row(scenario: string, feature: number[], without: number[], goalPercent: number, bad: number): Row {
  const f = meanOf(feature);
  const w = meanOf(without);
  return { scenario, feature: Math.round(f), without: Math.round(w), slowerPercent: slower(f, w), medianSlowerPercent: slower(medianOf(feature), medianOf(without)), goalPercent, bad };
}

const rows: Row[] = [];
const post = (body: unknown) => ({ method: 'POST', headers, body: JSON.stringify(body) });
const card = { type: 'card', card: { card_number: '4242424242424242', expiry: '12/35', card_code: '123' } };
const customer = await (await fetch(`${plain}/customers`, post({ name: 'Bench payer' }))).json() as { id: string };
/**
 * Customers renamed in turn, each request to a name of its own, so every update changes a field
 * and is audited (autocannon's `[<id>]` sends nothing with a list of requests: a `setupRequest` names them).
 */
const renamed = await Promise.all(Array.from({ length: CONNECTIONS * 2 }, async () => (await (await fetch(`${plain}/customers`, post({ name: 'Bench renamed' }))).json() as { id: string }).id));
let renameCount = 0;
const renames = {
  requests: renamed.map((id) => ({
    method: 'PUT', path: `/customers/${id}`, headers,
    setupRequest: (request: Record<string, unknown>) => ({ ...request, body: JSON.stringify({ name: `Renamed ${++renameCount}` }) }),
  })),
};
const backend = Number((await db.raw('select pg_backend_pid() as pid')).rows[0].pid);
const postmaster = Number(statFields(backend)[1]);
/**
 * CPU ms per request of the web process plus Postgres, where the audit rows are built, audited and
 * not (medians of the rounds): with Postgres whole, and with the bench database's backends alone.
 */
const auditCpu: Array<{ scenario: string; on: number; off: number; ownOn: number; ownOff: number }> = [];
interface Mode {
  name: string;
  /** the audit triggers enabled */
  triggers: boolean;
  server: string;
  pid: number;
}
const off: Mode = { name: 'off', triggers: false, server: audit, pid: auditing.pid! };
const audited: Mode = { name: 'on', triggers: true, server: audit, pid: auditing.pid! };
const triggerOnly: Mode = { name: 'on, by trigger', triggers: true, server: triggered, pid: byTrigger.pid! };
const tag = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`);

/**
 * Grows the tenant to `size` customers and its audit history to `size` events. The customers the
 * scenarios made carry theirs already; each grown one gets the event of its creation by an API
 * key, with a request id and an address (ids minted as the API mints them), and what is still
 * short is made of objects since deleted. The bench's own rounds add some hundred thousand rows of
 * each, so the smaller size is where they start, not where they stay.
 */
async function growAudited(size: number): Promise<void> {
  await setAudit(false);
  await growTenant(databaseUrl, 'accounts', key.orgId, 'customer', 'acct', size, `'{"name": "Existing", "email": "existing@example.com"}'`);
  await setAudit(true);
  const [{ events }] = (await db.raw(`select count(*)::int as events from audit_events where org_id = ?`, [key.orgId])).rows;
  await db.raw(
    `with objects as (
       (select a.id, a.org_id, a.environment, a.data, a.created_at
          from accounts a
         where a.org_id = ? and a.data->>'name' = 'Existing'
           and not exists (select from audit_events e where (e.data #>> '{object_id}') = a.id)
         limit ?)
       union all
       select new_object_id('acct'), ?, 'test', '{"name": "Deleted", "email": "deleted@example.com"}', now() - make_interval(secs => g)
         from generate_series(1, ?) g)
     insert into audit_events (id, org_id, environment, type, data, created_at, modified_at)
     select new_object_id('aud'), o.org_id, o.environment, 'audit_event',
            jsonb_build_object('actor', jsonb_build_object('type', 'secret_key', 'key_prefix', 'test_secret_key_bench'), 'action', 'create',
              'object_type', 'account', 'object_id', o.id,
              'changes', jsonb_build_object('name', jsonb_build_array(null, o.data->'name'), 'email', jsonb_build_array(null, o.data->'email'), 'type', '[null, "customer"]'::jsonb),
              'request_id', new_object_id('req'), 'ip', '127.0.0.1'),
            o.created_at, o.created_at
       from (select * from objects limit ?) o`,
    [key.orgId, Math.max(0, size - events), key.orgId, Math.max(0, size - events), Math.max(0, size - events)]);
  // What autovacuum and the next checkpoint would do about the grown rows is done now, before the rounds.
  await db.raw('vacuum analyze accounts, audit_events');
  await db.raw('checkpoint');
}

// At each size, alternated rounds, off first in the first round and last in the next, so the
// neighbours' load falls on every mode alike.
for (const [size, scenario, path, options, modes, grow] of !PARTS.has('audit') ? [] : dataSizes().flatMap((size) => ([
  ['create customer', '/customers', post({ name: 'Bench customer', email: 'bench@example.com' }), [off, audited], 'create'],
  ['card payment', '/transactions', post({ type: 'payment', amount: 10, customer_id: customer.id, payment_method: card }), [off, audited, triggerOnly], 'payment'],
  ['update customer', '', renames, [off, audited, triggerOnly], 'update'],
] as const).filter(([, , , , name]) => SCENARIOS.has(name))
  // The tenant is grown to the size before the size's first scenario.
  .map(([scenario, path, options, modes], i) => [size, scenario, path, options, modes, i === 0] as const))) {
  if (grow) {
    const started = Date.now();
    await growAudited(size);
    const [{ events }] = (await db.raw(`select count(*)::int as events from audit_events where org_id = ?`, [key.orgId])).rows;
    process.stderr.write(`tenant at ${size} customers, ${events} audit events (${((Date.now() - started) / 1000).toFixed(1)} s to generate)\n`);
  }
  const reqPerSec = new Map<Mode, number[]>(modes.map((mode) => [mode, []]));
  const cpu = new Map<Mode, number[]>(modes.map((mode) => [mode, []]));
  const ownCpu = new Map<Mode, number[]>(modes.map((mode) => [mode, []]));
  let bad = 0;
  for (const mode of modes) {
    await setAudit(mode.triggers);
    await warmUp(`${mode.server}${path}`, options);
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 ? [...modes].reverse() : modes) {
      await setAudit(mode.triggers);
      process.stderr.write(`${scenario} @${tag(size)}, audit ${mode.name}, round ${round + 1}: `);
      const measured = await load(`${mode.server}${path}`, options, [() => cpuMs(mode.pid), () => postgresCpuMs(postmaster), ownBackendsCpuMs]);
      reqPerSec.get(mode)!.push(measured.reqPerSec);
      const [web, postgres, ownPostgres] = measured.cpuMsPerRequest as [number, number, number];
      cpu.get(mode)!.push(web + postgres);
      ownCpu.get(mode)!.push(web + ownPostgres);
      bad += measured.bad;
      process.stderr.write(`${measured.reqPerSec.toFixed(0)} req/s, web ${web.toFixed(3)} + Postgres ${postgres.toFixed(3)} (its database's backends ${ownPostgres.toFixed(3)}) CPU ms/req, load ${os.loadavg()[0].toFixed(2)}\n`);
    }
  }
  for (const mode of modes.slice(1)) {
    const label = mode === audited ? `${scenario} @${tag(size)} (audit)` : `${scenario} @${tag(size)} (audit ${mode.name})`;
    const measured = { scenario: label, on: medianOf(cpu.get(mode)!), off: medianOf(cpu.get(off)!), ownOn: medianOf(ownCpu.get(mode)!), ownOff: medianOf(ownCpu.get(off)!) };
    auditCpu.push(measured);
    const ratios = ownCpu.get(mode)!.map((on, round) => on / ownCpu.get(off)![round]!);
    rows.push({ ...row(label, reqPerSec.get(mode)!, reqPerSec.get(off)!, 10, bad), cpuMorePercent: Math.round((medianOf(ratios) - 1) * 1000) / 10 });
  }
}
await setAudit(true);

/**
 * The web process builds a created row's audit event (createdAudit) whether or not the table's
 * audit trigger is enabled, so the comparison above has that work on both sides: it is timed
 * here, on rows the scenarios stored (a card payment builds its method's and its transaction's),
 * and counted against the audit beside the CPU figures.
 */
async function buildMicros(rowsOf: () => Promise<Array<{ row: StoredObject; type: string }>>): Promise<number> {
  const found = await rowsOf();
  const setting = JSON.stringify({ actor: { type: 'secret_key', key_prefix: 'test_secret_key_bench' }, request_id: newId('req'), ip: '::ffff:127.0.0.1' });
  const build = () => { for (const { row, type } of found) createdAudit(type, [{ row, audit: setting }]); };
  for (let i = 0; i < 20_000; i++) build();
  const runs = 100_000;
  const started = performance.now();
  for (let i = 0; i < runs; i++) build();
  return ((performance.now() - started) * 1000) / runs;
}
const storedOne = async (table: string, type: string, where: string) => {
  const row = (await db.raw(`select id, type, data, created_at, modified_at from ${table} where ${where} order by created_at desc limit 1`)).rows[0] as StoredObject | undefined;
  return row ? [{ row, type }] : [];
};
const buildCost = PARTS.has('audit') ? {
  'create customer (audit)': await buildMicros(() => storedOne('accounts', 'account', `type = 'customer'`)),
  'card payment (audit)': await buildMicros(async () => [...await storedOne('payment_methods', 'payment_method', `type = 'card'`), ...await storedOne('transactions', 'transaction', `type = 'payment'`)]),
} as Record<string, number> : {};

/**
 * The reporting process mirrors the transactions the audit scenarios wrote: the comparison of the
 * request log starts once it has caught up (its rows mirrored unchanged for 3 s, at most 2 min),
 * so its catching up falls on neither side.
 */
async function reportingCaughtUp(): Promise<void> {
  const until = Date.now() + 120_000;
  let last = -1;
  let unchanged = 0;
  while (Date.now() < until && unchanged < 3) {
    const health = await (await fetch(`http://127.0.0.1:${reportingPort}/healthz`, { headers: REPORTING_AUTH })).json().catch(() => ({})) as { rows_mirrored?: number };
    const mirrored = Number(health.rows_mirrored ?? -1);
    unchanged = mirrored === last ? unchanged + 1 : 0;
    last = mirrored;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
if (PARTS.has('log')) await reportingCaughtUp();

const logged: number[] = [];
const notLogged: number[] = [];
// The reporting process's CPU counts too: it stores the rows (and is idle while nothing is logged).
const webCpu = { logged: [] as number[], notLogged: [] as number[] };
const reportingCpu = { logged: [] as number[], notLogged: [] as number[] };
let badGets = 0;
if (PARTS.has('log')) for (const base of [plain, withLog]) await warmUp(`${base}/customers/${customer.id}`, { headers });
for (let round = 0; round < (PARTS.has('log') ? ROUNDS : 0); round++) {
  const runs = [[plain, unlogged.pid!, notLogged, 'notLogged'], [withLog, loggedChild.pid!, logged, 'logged']] as const;
  // The order alternates too, so a neighbour's burst or the mirror's catching up is not always on one side.
  for (const [base, pid, into, side] of round % 2 ? [...runs].reverse() : runs) {
    process.stderr.write(`get-by-id, ${base === plain ? 'no request log' : 'request log'}, round ${round + 1}: `);
    const measured = await load(`${base}/customers/${customer.id}`, { headers }, [() => cpuMs(pid), () => cpuMs(reporting.pid!)]);
    into.push(measured.reqPerSec);
    webCpu[side].push(measured.cpuMsPerRequest[0]!);
    reportingCpu[side].push(measured.cpuMsPerRequest[1]!);
    badGets += measured.bad;
    process.stderr.write(`${measured.reqPerSec.toFixed(0)} req/s, web ${measured.cpuMsPerRequest[0]!.toFixed(3)} + reporting ${measured.cpuMsPerRequest[1]!.toFixed(3)} CPU ms/req, load ${os.loadavg()[0].toFixed(2)}\n`);
  }
}
if (PARTS.has('log')) rows.push(row('get-by-id (request log)', logged, notLogged, 5, badGets));

// Ingestion: what the web processes' shippers send, straight to the reporting process, into a
// store already holding each size of BENCH_ROWS (filled the same way, untimed, before the timed
// batches; the request log's retention keeps a month of rows, so a busy install's store is large).
const INGEST_ROWS = 200_000;
const BATCH = 10_000;
const SENDERS = 4;
// As web processes ship them (api/http/requestLog.ts): a line of the column names, then a row a line.
const body = (run: string): string => [REQUEST_LOG_SHIPPED, ...Array.from({ length: BATCH }, (_, i): RequestLogTuple => [
  'org_ingest', 'test', `req_${run}_${i}`, 'GET', '/customers/:id', `/customers/acct_${i}`, i % 17 === 0 ? 404 : 200, i % 40,
  'test_secret_key_abcdefgh', null, 'v1', i % 17 === 0 ? 'NotFound' : null, '127.0.0.1', 'bench', storedLogTime(Date.now()),
])].map((line) => `${JSON.stringify(line)}\n`).join('');
/** Posts the batches by SENDERS senders at once; seconds taken. */
async function ship(batches: Array<() => string>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: SENDERS }, async () => {
    while (next < batches.length) {
      const response = await fetch(`http://127.0.0.1:${reportingPort}/request_logs`, { method: 'POST', headers: { 'Content-Type': 'application/x-ndjson', ...REPORTING_AUTH }, body: batches[next++]!() });
      if (!response.ok) throw new Error(`ingest answered ${response.status}: ${await response.text()}`);
      await response.arrayBuffer();
    }
  }));
  return (performance.now() - started) / 1000;
}
const ingestion: Array<{ storedBefore: number; seconds: number; rowsPerSecond: number }> = [];
let stored = 0;
for (const size of PARTS.has('ingest') ? dataSizes() : []) {
  const filling = Math.max(0, Math.ceil((size - stored) / BATCH));
  await ship(Array.from({ length: filling }, (_, n) => () => body(`fill${stored}_${n}`)));
  stored += filling * BATCH;
  // Built before the clock starts, so the senders' JSON is not counted against the store.
  const timed = Array.from({ length: INGEST_ROWS / BATCH }, (_, n) => body(`timed${stored}_${n}`));
  const seconds = await ship(timed.map((text) => () => text));
  ingestion.push({ storedBefore: stored, seconds, rowsPerSecond: Math.round(INGEST_ROWS / seconds) });
  stored += INGEST_ROWS;
  process.stderr.write(`ingestion into ${stored - INGEST_ROWS} rows: ${INGEST_ROWS} in ${seconds.toFixed(2)} s, load ${os.loadavg()[0].toFixed(2)}\n`);
}

await db.destroy();
await cleanup();
fs.rmSync(chDir, { recursive: true, force: true });

console.log(`\naudit: ${CONNECTIONS} connections, ${SECONDS} s per run (after ${WARMUP_SECONDS} s warm-up), ${ROUNDS} alternated rounds each, Node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(2)}\n`);
console.log(['scenario'.padEnd(40), 'CPU more', 'goal', 'with req/s', 'without req/s', 'slower', 'of medians', 'non-2xx'].join('  '));
for (const r of rows) {
  console.log([r.scenario.padEnd(40), (r.cpuMorePercent === undefined ? '-' : `${r.cpuMorePercent.toFixed(1)} %`).padStart(8),
    `${passes(r) ? 'PASS' : 'MISS'} (<= ${r.goalPercent} %)`, String(r.feature).padStart(10), String(r.without).padStart(13),
    `${r.slowerPercent.toFixed(1)} %`.padStart(6), `${r.medianSlowerPercent.toFixed(1)} %`.padStart(10), r.bad].join('  '));
}
console.log('CPU more: web + the bench database\'s backends, CPU ms per request, the median of the rounds\' ratios; the goal is judged on it where shown, else on req/s.');
for (const { scenario, on, off, ownOn, ownOff } of auditCpu) {
  console.log(`\n${scenario}, CPU ms per request (medians of the rounds), web + the bench database's backends: ${ownOn.toFixed(3)} audited, ${ownOff.toFixed(3)} not (${((ownOn / ownOff - 1) * 100).toFixed(1)} %)`);
  console.log(`  web + Postgres whole: ${on.toFixed(3)} audited, ${off.toFixed(3)} not (${((on / off - 1) * 100).toFixed(1)} %)`);
  const built = buildCost[scenario.replace(/ @\S+/, '')];
  if (built !== undefined) {
    const without = ownOff - built / 1000;
    console.log(`  the web building its audit events, on both sides: ${built.toFixed(1)} µs a request; counted against the audit: ${((ownOn / without - 1) * 100).toFixed(1)} %`);
  }
}
if (PARTS.has('log')) console.log(`\nget-by-id, the web process's CPU per request: ${meanOf(webCpu.logged).toFixed(3)} ms logging, ${meanOf(webCpu.notLogged).toFixed(3)} ms not (${((meanOf(webCpu.logged) / meanOf(webCpu.notLogged) - 1) * 100).toFixed(1)} %); the reporting process's: ${meanOf(reportingCpu.logged).toFixed(3)} ms logging, ${meanOf(reportingCpu.notLogged).toFixed(3)} ms not`);
for (const { storedBefore, seconds, rowsPerSecond } of ingestion) {
  console.log(`\nrequest-log ingestion into a store of ${storedBefore} rows: ${INGEST_ROWS} rows in ${seconds.toFixed(2)} s = ${rowsPerSecond} rows/s (${rowsPerSecond >= 20_000 ? 'PASS' : 'MISS'}, goal >= 20000)`);
}
fs.mkdirSync(resultsDir, { recursive: true });
fs.writeFileSync(path.join(resultsDir, 'audit.json'), JSON.stringify({ rows, auditCpuMsPerRequest: auditCpu, auditBuildMicrosPerRequest: buildCost, webCpuMsPerGet: { logged: meanOf(webCpu.logged), notLogged: meanOf(webCpu.notLogged) }, reportingCpuMsPerGet: { logged: meanOf(reportingCpu.logged), notLogged: meanOf(reportingCpu.notLogged) }, ingestion: ingestion.map((run) => ({ rows: INGEST_ROWS, ...run })), load1: os.loadavg()[0] }, null, 2));
