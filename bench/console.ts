/**
 * `npm run bench:console`: what an operator waits for at the console (CONTRACT §25), at each size
 * of one org's transactions (BENCH_ROWS, default 10k then 1M, spread over the last 365 days):
 *
 *   (a) the Reports view's request for a year by day compared with the previous year: the two
 *       aggregate requests the page makes at once (api/console/public/reports.js `daysOf`, the
 *       same module the browser loads), through the web process to the reporting process
 *       (ClickHouse), each with no split and split by status (the view's default), with the
 *       ClickHouse part of the slower of the two and the table that answered (rollup or mirror,
 *       from the reporting process's Server-Timing). The previous
 *       year holds no transactions here. Target: both answered in under 1 s ("a year of a
 *       million transactions draws in under a second"; drawing itself is the browser's, not
 *       measured here).
 *   (b) the search box (api/console/public/search.js `find`: customers, their payment methods,
 *       then transactions, one request after another), for every prefix of two characters or
 *       more of terms an operator types: an e-mail, a name, last four digits, an amount, an order
 *       number, a transaction id and a word nothing matches. Target: p99 under 100 ms per search
 *       (a keystroke's answer, after the box's 180 ms pause, should feel immediate).
 *
 * Rows are generated in Postgres by SQL with only the reporting change trigger firing (as
 * bench:reporting does), then analysed (autovacuum would analyse a table that grew so much).
 * Customers: one per 50 transactions. Postgres: DATABASE_URL when set, else an embedded server
 * (as `npm start`); ClickHouse: the embedded chdb. Results: tables on stdout, JSON in
 * bench/results/console.json. Env: BENCH_ROWS, BENCH_REPORT_RUNS (default 9), BENCH_SEARCH_RUNS
 * (times each prefix is searched, default 3).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb, rows, type Db } from '../api/db/connection.ts';
import { freePort } from '../api/db/embedded.ts';
import { benchKey } from './keys.ts';
import { covers, parseSnapshot } from '../reporting/feed.ts';
import { benchDatabase, cleanup, dataSizes, positive, resultsDir, startChild, waitForHttp } from './harness.ts';
import { REPORTING_AUTH } from './reportingAuth.ts';
import { chdbBenchDir } from './chdbDir.ts';

const REPORT_RUNS = positive('BENCH_REPORT_RUNS', 9);
const SEARCH_RUNS = positive('BENCH_SEARCH_RUNS', 3);
const TARGETS = { reportMs: 1000, searchP99Ms: 100 };
const CHUNK = 50_000;

type Ask = (method: string, path: string, options?: { params?: Record<string, string> }) => Promise<{ values: Array<Record<string, unknown>> }>;
const reports = await import(new URL('../api/console/public/reports.js', import.meta.url).href) as {
  rangeOf: (state: Record<string, string>, today?: string) => { from: string; to: string; previous: { from: string; to: string } };
  daysOf: (range: { from: string; to: string }, split: string, q: string | undefined, ask: Ask) => Promise<unknown[]>;
};
const search = await import(new URL('../api/console/public/search.js', import.meta.url).href) as {
  find: (term: string, ask: Ask) => Promise<{ customers: unknown[]; transactions: unknown[] }>;
};

process.once('uncaughtException', (error) => {
  console.error(error);
  cleanup().finally(() => process.exit(1));
});

function log(message: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

const load = () => os.loadavg().map((n) => n.toFixed(1)).join(' ');

// ---- data -----------------------------------------------------------------------------------------
const databaseUrl = await benchDatabase();
const db = createDb(databaseUrl, 2);
const key = await benchKey(db, 'bench');
await rows(db, 'alter table transactions enable always trigger transactions_inserted');

const FIRST = ['Ann', 'Ben', 'Cara', 'Dev', 'Eli', 'Fay', 'Gus', 'Hana', 'Ivo', 'Jo', 'Kai', 'Lea', 'Max', 'Nia', 'Oto', 'Pia'];
const LAST = ['Smith', 'Jones', 'Okafor', 'Garcia', 'Nguyen', 'Kowalski', 'Rossi', 'Silva', 'Tanaka', 'Berg', 'Moreau', 'Haddad', 'Novak'];
const WORDS = ['Annual plan', 'Monthly plan', 'Spare parts', 'Consulting hours', 'Shipping', 'Gift card', 'Repair', 'Tickets'];
const customerId = (n: string) => `'acct_bench' || lpad(${n}::text, 16, '0')`;

/** Customers `from`..`to`: a name from two lists, an e-mail made of it and the number. */
async function generateCustomers(tx: Db, from: number, to: number): Promise<void> {
  await rows(tx, `
    insert into accounts (id, org_id, environment, type, data, created_at, modified_at)
    select ${customerId('g')}, ?, 'test', 'customer',
           jsonb_build_object('name', n.first || ' ' || n.last, 'email', lower(n.first || '.' || n.last || g) || '@example.com'),
           now() - make_interval(secs => g * 60), now() - make_interval(secs => g * 60)
      from generate_series(?::bigint, ?::bigint) g,
           lateral (select (?::text[])[1 + g % ?] as first, (?::text[])[1 + (g / ?) % ?] as last) n`,
  [key.orgId, from, to, FIRST, FIRST.length, LAST, FIRST.length, LAST.length]);
}

/**
 * Transactions `from`..`to` over the last 365 days: amounts 1.00–1,000.00, a status mix, a
 * customer of the `customers` made so far, an order number, a description and a masked card.
 */
async function generateTransactions(tx: Db, from: number, to: number, customers: number): Promise<void> {
  await rows(tx, `
    insert into transactions (id, org_id, environment, type, data, created_at, modified_at)
    select 'txn_bench' || lpad(g::text, 15, '0'), ?, 'test', 'payment',
           jsonb_build_object('amount', 100 + abs(h) % 100000, 'currency', 'USD',
             'status', (array['processed','processed','processed','authorized','voided','declined'])[1 + abs(h >> 8) % 6],
             'customer_id', ${customerId('(1 + abs(h >> 12) % ?)')},
             'order_number', 'ORD-' || lpad(g::text, 8, '0'),
             'description', (?::text[])[1 + abs(h >> 16) % ?] || ' #' || (abs(h >> 20) % 100000),
             'payment_method', jsonb_build_object('type', 'card', 'card', jsonb_build_object('card_number', 'xxxxxxxxxxxx' || lpad((abs(h >> 24) % 10000)::text, 4, '0'), 'card_brand', 'visa'))),
           at, at
      from generate_series(?::bigint, ?::bigint) g,
           lateral (select hashint8(g) as h, now() - ((abs(hashint8(g + 7)) % (365 * 86400)) * interval '1 second') as at) r`,
  [key.orgId, customers, WORDS, WORDS.length, from, to]);
}

let rowsMade = 0;
let customersMade = 0;
async function growTo(size: number): Promise<void> {
  const customers = Math.max(200, Math.ceil(size / 50));
  const started = performance.now();
  if (customers > customersMade) {
    await db.transaction(async (tx) => {
      await rows(tx, 'set local session_replication_role = replica');
      await generateCustomers(tx, customersMade + 1, customers);
    });
    customersMade = customers;
  }
  for (let from = rowsMade + 1; from <= size; from += CHUNK) {
    await db.transaction(async (tx) => {
      await rows(tx, 'set local session_replication_role = replica');
      await generateTransactions(tx, from, Math.min(size, from + CHUNK - 1), customersMade);
    });
  }
  rowsMade = size;
  await rows(db, 'vacuum analyze transactions');
  await rows(db, 'vacuum analyze accounts');
  log(`${size.toLocaleString('en')} transactions, ${customers.toLocaleString('en')} customers, generated in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

// ---- processes ------------------------------------------------------------------------------------
const chDir = chdbBenchDir();
process.once('exit', () => fs.rmSync(chDir, { recursive: true, force: true }));
const reportingPort = await freePort();
const reportingUrl = `http://127.0.0.1:${reportingPort}`;
const reporting = startChild('console', 'reporting', 'reporting/main.ts', { DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: chDir, REPORTING_PORT: String(reportingPort), LOG_LEVEL: 'warn', REPORTING_WAIT: '30000' });
const webPort = await freePort();
const web = `http://127.0.0.1:${webPort}`;
const webChild = startChild('console', 'web', 'api/server.ts', { DATABASE_URL: databaseUrl, PORT: String(webPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn', SETTLE_RATE_LIMIT: 'off', REPORTING_URL: reportingUrl, REPORTING_WAIT: '30000' });
await waitForHttp(`${web}/healthz`, webChild, 120_000);
await waitForHttp(`${reportingUrl}/healthz`, reporting, 120_000);

/** Until the reporting process has mirrored every transaction committed so far. */
async function mirrored(): Promise<number> {
  const started = performance.now();
  const [now] = await rows<{ p: string }>(db, 'select pg_current_snapshot()::text as p');
  const target = parseSnapshot(now.p)!;
  for (;;) {
    const health = await (await fetch(`${reportingUrl}/healthz`, { headers: REPORTING_AUTH })).json() as { role?: string; position?: string };
    const position = health.position ? parseSnapshot(health.position) : null;
    if (health.role === 'leader' && position && covers(position, target)) return (performance.now() - started) / 1000;
    if (performance.now() - started > 30 * 60_000) throw new Error('the reporting process did not catch up in 30 minutes');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const authorization = `Basic ${Buffer.from(`${key.secret}:`).toString('base64')}`;
/** The reporting process's Server-Timing of the answers since the last look: ms in ClickHouse, and the table that answered. */
let timings: Array<{ clickhouseMs: number; answered: string }> = [];
/** The console's `api()` for GETs, over HTTP to the web process with the key. */
const ask: Ask = async (method, route, options = {}) => {
  const query = options.params ? `?${new URLSearchParams(options.params)}` : '';
  const res = await fetch(`${web}${route}${query}`, { method, headers: { Authorization: authorization } });
  const body = await res.json() as { values: Array<Record<string, unknown>> };
  if (res.status !== 200) throw new Error(`${route}${query}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  const timing = /clickhouse;dur=([\d.]+);desc="([^"]*)"/.exec(res.headers.get('server-timing') ?? '');
  if (timing) timings.push({ clickhouseMs: Number(timing[1]), answered: timing[2] });
  return body;
};

// ---- measuring ------------------------------------------------------------------------------------
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
function spread(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  return { n: sorted.length, p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), max: round(sorted.at(-1)!) };
}

async function timed<T>(work: () => Promise<T>): Promise<[number, T]> {
  const started = performance.now();
  const answer = await work();
  return [performance.now() - started, answer];
}

async function measureReports() {
  const today = new Date().toISOString().slice(0, 10);
  const yearAgo = new Date(Date.now() - 364 * 86_400_000).toISOString().slice(0, 10);
  const range = reports.rangeOf({ from: yearAgo, to: today });
  const results = [];
  for (const split of ['', 'status']) {
    const runs: number[] = [];
    const clickhouse: number[] = [];
    const answered = new Set<string>();
    let dayRows = 0;
    for (let run = 0; run < REPORT_RUNS + 1; run++) {
      timings = [];
      const [ms, [now]] = await timed(() => Promise.all([reports.daysOf(range, split, undefined, ask), reports.daysOf(range.previous, split, undefined, ask)]));
      dayRows = now.length;
      if (run === 0) continue; // the first warms the processes' caches
      runs.push(ms);
      clickhouse.push(Math.max(...timings.map((t) => t.clickhouseMs)));
      for (const t of timings) answered.add(t.answered);
    }
    results.push({
      name: `a year by day vs the year before, ${split ? `split by ${split}` : 'no split'}`,
      rows: dayRows, ms: spread(runs), clickhouseMs: spread(clickhouse), answered: [...answered].join(', '), load: load(),
    });
  }
  return results;
}

/** What an operator types, each searched at every prefix of two characters or more. */
async function searchTerms(): Promise<string[]> {
  const [someone] = await rows<{ email: string; name: string }>(db, `select data->>'email' as email, data->>'name' as name from accounts where org_id = ? and type = 'customer' order by id desc limit 1`, [key.orgId]);
  const [payment] = await rows<{ id: string; order_number: string; amount: string; card: string }>(db,
    `select id, data->>'order_number' as order_number, data->>'amount' as amount, right(data #>> '{payment_method,card,card_number}', 4) as card
       from transactions where org_id = ? order by id desc limit 1`, [key.orgId]);
  return [someone.email.split('@')[0], someone.name.split(' ')[1], payment.card, (Number(payment.amount) / 100).toFixed(2), payment.order_number, payment.id, 'zqxv'];
}

async function measureSearch() {
  const terms = await searchTerms();
  const all: number[] = [];
  const byTerm = [];
  for (const term of terms) {
    const runs: number[] = [];
    let found = 0;
    for (let length = 2; length <= term.length; length++) {
      for (let run = 0; run < SEARCH_RUNS; run++) {
        const [ms, answer] = await timed(() => search.find(term.slice(0, length), ask));
        runs.push(ms);
        if (length === term.length) found = answer.customers.length + answer.transactions.length;
      }
    }
    all.push(...runs);
    byTerm.push({ term, found, ms: spread(runs) });
  }
  return { all: spread(all), byTerm, load: load() };
}

// ---- the run --------------------------------------------------------------------------------------
const results = [];
try {
  for (const size of dataSizes()) {
    await growTo(size);
    const catchUp = await mirrored();
    log(`mirrored by the reporting process ${catchUp.toFixed(1)} s after the last commit; load ${load()}`);
    const report = await measureReports();
    const searched = await measureSearch();
    results.push({ size, report, search: searched });

    console.log(`\n${size.toLocaleString('en')} transactions in one org over a year (load average ${load()})`);
    console.log('| Reports view request | day×group rows | p50 ms | p99 ms | max ms | target | ClickHouse p50 ms | answered from | load |');
    console.log('|---|---:|---:|---:|---:|---|---:|---|---|');
    for (const r of report) {
      console.log(`| ${r.name} | ${r.rows} | ${r.ms.p50} | ${r.ms.p99} | ${r.ms.max} | < ${TARGETS.reportMs} ms ${r.ms.max < TARGETS.reportMs ? 'met' : 'MISSED'} | ${r.clickhouseMs.p50} | ${r.answered} | ${r.load} |`);
    }
    console.log(`\n| Search as you type (${searched.all.n} searches) | found | p50 ms | p99 ms | max ms |`);
    console.log('|---|---:|---:|---:|---:|');
    for (const t of searched.byTerm) console.log(`| “${t.term}” and its prefixes | ${t.found} | ${t.ms.p50} | ${t.ms.p99} | ${t.ms.max} |`);
    console.log(`| all | | ${searched.all.p50} | ${searched.all.p99} | ${searched.all.max} |`);
    console.log(`search p99 ${searched.all.p99} ms, target < ${TARGETS.searchP99Ms} ms: ${searched.all.p99 < TARGETS.searchP99Ms ? 'met' : 'MISSED'} (load ${searched.load})`);
  }
  fs.mkdirSync(resultsDir, { recursive: true });
  fs.writeFileSync(path.join(resultsDir, 'console.json'), JSON.stringify({ when: new Date().toISOString(), cpus: os.cpus().length, targets: TARGETS, results }, null, 2));
} finally {
  await db.destroy();
  await cleanup();
}
