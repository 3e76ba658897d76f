/**
 * `GET /transactions?format=parquet` from the reporting store: a real Parquet file (read back here
 * by ClickHouse's own reader in a child process) with the same rows and values as the CSV of the
 * same query, money as decimals and times as timestamps; read-your-writes as for aggregates.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { startTestApi } from './helpers/api.ts';
import { reportingFirst, tempDataDir } from './reporting-support.ts';

const { databaseUrl, webEnv } = await reportingFirst(t, { REPORTING_WAIT: '5000', SETTLE_EXPORT_MAX_ROWS: '50' });
const api = await startTestApi(t, webEnv, {}, databaseUrl);
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };
const dir = tempDataDir(t);

/** Reads a Parquet file with chdb in a child process: its column types and its rows. */
function readParquet(file: string): { types: Record<string, string>; rows: Array<Record<string, unknown>> } {
  const script = `
    import { queryAsync } from 'chdb';
    const describe = await queryAsync("DESCRIBE file('${file}', Parquet)", { format: 'JSONEachRow' });
    const rows = await queryAsync("SELECT * FROM file('${file}', Parquet) FORMAT JSONEachRow", {});
    console.log(JSON.stringify({ describe: describe.text(), rows: rows.text() }));`;
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: path.resolve(import.meta.dirname, '..'), encoding: 'utf8' }));
  const lines = (text: string) => text.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
  return { types: Object.fromEntries(lines(out.describe).map((c: { name: string; type: string }) => [c.name, c.type])), rows: lines(out.rows) };
}

async function download(query: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; file: string; body: Buffer }> {
  const res = await fetch(`${api.url}/transactions?${query}`, { headers: { Authorization: `Bearer ${api.key}`, ...headers } });
  const body = Buffer.from(await res.arrayBuffer());
  const file = path.join(dir, `${Math.random().toString(36).slice(2)}.parquet`);
  fs.writeFileSync(file, body);
  return { status: res.status, type: res.headers.get('content-type'), file, body };
}

t.test('a Parquet file of the same rows and values as the CSV, typed', async (t) => {
  for (const amount of [7.99, 12, 1234.56]) {
    const paid = await api.request('POST', '/transactions', { json: { type: 'payment', amount, description: `Order ${amount}, "quoted"`, payment_method: CARD } });
    t.equal(paid.status, 200);
  }
  const got = await download('format=parquet&q=description%20%3F%20%22Order*%22');
  t.equal(got.status, 200, got.body.toString('utf8', 0, 300));
  t.match(got.type, /application\/vnd\.apache\.parquet/);
  t.equal(got.body.subarray(0, 4).toString(), 'PAR1', 'a Parquet file');
  const { types, rows } = readParquet(got.file);
  t.match(types.amount, /Decimal/, 'money as a decimal');
  t.match(types.created_at, /DateTime/, 'times as timestamps');
  t.equal(rows.length, 3, 'read-your-writes: the payments just made');
  const csv = (await (await fetch(`${api.url}/transactions?format=csv&fields=id,amount,status,description&q=description%20%3F%20%22Order*%22`, { headers: { Authorization: `Bearer ${api.key}` } })).text()).trim().split('\r\n').slice(1);
  const byId = new Map(rows.map((r) => [r.id as string, r]));
  for (const line of csv) {
    const id = line.split(',')[0];
    const row = byId.get(id);
    t.ok(row, `${id} in both`);
    t.equal(Number(row?.amount), Number(line.split(',')[1]), 'the same amount');
    t.equal(row?.status, 'processed');
  }
  t.same(rows.map((r) => Number(r.amount)), [7.99, 12, 1234.56], 'in created order, money exact');
});

t.test('named fields, v2 paths, and a limit', async (t) => {
  const got = await download('format=parquet&fields=id,amount,status.value&limit=2', { 'X-API-Version': 'v2' });
  t.equal(got.status, 200, got.body.toString('utf8', 0, 300));
  const { types, rows } = readParquet(got.file);
  t.same(Object.keys(types), ['id', 'amount', 'status.value'], 'exactly the named columns');
  t.equal(rows.length, 2);
});

t.test('what a Parquet export cannot hold is a 400, never a 500', async (t) => {
  const other = await api.request('GET', '/customers?format=parquet');
  t.equal(other.status, 400);
  const expression = await api.request('GET', '/transactions?format=parquet&fields=sum(amount)');
  t.equal(expression.status, 400);
  t.match(expression.body.error_description, /format=csv/);
  const unmirrored = await api.request('GET', '/transactions?format=parquet&fields=id,payment_method');
  t.equal(unmirrored.status, 400);
  t.match(unmirrored.body.details, { fields: /format=csv/ });
  const tooMany = await api.request('GET', '/transactions?format=parquet&limit=51');
  t.equal(tooMany.status, 400, 'a limit above SETTLE_EXPORT_MAX_ROWS');
  await api.db.raw(`insert into transactions (id, org_id, environment, type, data)
    select 'txn_bulk' || lpad(g::text, 21, '0'), org_id, environment, 'payment', jsonb_build_object('amount', 100, 'status', 'processed')
      from transactions, generate_series(1, 60) g where data->>'description' = 'Order 12, "quoted"'`);
  const over = await api.request('GET', '/transactions?format=parquet');
  t.equal(over.status, 400, 'more matching rows than the ceiling');
  t.match(over.body.error_description, /SETTLE_EXPORT_MAX_ROWS/);
});
