/**
 * One meaning, whichever store answers (CONTRACT §6): the list path (PostgreSQL, also every
 * transaction query when REPORTING_URL=off) and the aggregate path (ClickHouse in the reporting
 * process) give the same values for Unicode case functions and case-insensitive matching, money
 * literals with more than two decimals, values of functions, and `conv_fee`, which rows show as 0.
 */
import t, { type Test } from 'tap';
import { loadConfig } from '../api/config.ts';
import { createDb, rows } from '../api/db/connection.ts';
import { caseTable, LOWER_RUNS, readCaseTables, UPPER_RUNS } from '../api/query/caseMap.ts';
import { caseTablesMatch } from '../api/query/functions.ts';
import { startWeb } from '../api/server.ts';
import { startTestApi, TEST_REPORTING_SECRET } from './helpers/api.ts';
import { startTestReporting, tempDataDir } from './reporting-support.ts';

const api = await startTestApi(t, { REPORTING_URL: 'off' });
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35' } };
await api.request('POST', '/processing_accounts', { json: { name: 'Shop' } });
const PAYMENTS = [
  { amount: 1.005, description: 'İstanbul', order_number: '00123', attrs: { code: '007', batch: 'meaning' } },
  { amount: 1, description: 'ISTANBUL', order_number: 'A-1', attrs: { code: '7', batch: 'meaning' } },
  { amount: 1.004, description: 'istanbul', attrs: { batch: 'meaning' } },
  { amount: 2, description: 'straße', attrs: { batch: 'meaning' } },
  { amount: 3, description: 'STRASSE', attrs: { batch: 'meaning' } },
];
for (const payment of PAYMENTS) {
  const res = await api.request('POST', '/transactions', { json: { type: 'payment', payment_method: CARD, ...payment } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
}

const reporting = await startTestReporting(t, api.databaseUrl, tempDataDir(t), { REPORTING_PORT: '0' });
const web = await startWeb(loadConfig({ LOG_LEVEL: 'silent', SETTLE_RATE_LIMIT: 'off', DATABASE_URL: api.databaseUrl, PORT: '0', REPORTING_URL: reporting.running.url, REPORTING_SECRET: TEST_REPORTING_SECRET, REPORTING_WAIT: '10000' }), { keyCacheMs: 0 });
t.teardown(() => web.stop());

type Answer = { status: number; body: { values: Array<Record<string, unknown>>; reporting_position?: string } };

/** The same request on both paths: the web process alone (Postgres), and with the reporting process (ClickHouse). */
async function both(query: string): Promise<{ postgres: Answer; clickhouse: Answer }> {
  const postgres = await api.request('GET', `/transactions?${query}&attrs[batch]=meaning`);
  const res = await fetch(`${web.url}/transactions?${query}&attrs[batch]=meaning`, { headers: { Authorization: `Basic ${Buffer.from(`${api.key}:`).toString('base64')}` } });
  return { postgres: postgres as Answer, clickhouse: { status: res.status, body: (await res.json()) as Answer['body'] } };
}

async function sameOnBoth(t: Test, query: string, expected: Array<Record<string, unknown>>): Promise<void> {
  const { postgres, clickhouse } = await both(query);
  t.equal(postgres.status, 200, JSON.stringify(postgres.body));
  t.equal(clickhouse.status, 200, JSON.stringify(clickhouse.body));
  t.ok(clickhouse.body.reporting_position, 'answered by the reporting process');
  t.same(postgres.body.values, expected, `postgres: ${query}`);
  t.same(clickhouse.body.values, expected, `clickhouse: ${query}`);
}

const q = (text: string) => `q=${encodeURIComponent(text)}`;

t.test('the case table is what this PostgreSQL does to every character', async (t) => {
  const db = createDb(api.databaseUrl, 1);
  t.teardown(() => db.destroy());
  for (const [fn, runs] of [['lower', LOWER_RUNS], ['upper', UPPER_RUNS]] as const) {
    const table = caseTable(runs);
    const [row] = await rows<{ from_text: string; to_text: string }>(db,
      `select string_agg(chr(i), '' order by i) as from_text, string_agg(${fn}(chr(i)), '' order by i) as to_text
         from generate_series(1, 1114111) i where i not between 55296 and 57343 and ${fn}(chr(i)) <> chr(i)`);
    t.equal(table.from, row.from_text, `${fn}: the characters it changes`);
    t.equal(table.to, row.to_text, `${fn}: what each becomes`);
  }
});

t.test("the reporting process reads the case mapping of its own database's locale", async (t) => {
  const admin = createDb(api.databaseUrl, 1);
  t.teardown(() => admin.destroy());
  const own = await readCaseTables((sql) => rows(admin, sql));
  t.ok(caseTablesMatch(own), 'this database maps case as the built-in tables say');
  t.same(own.widening, [], 'one character to one');

  const name = `case_tr_${process.pid}_${Date.now()}`;
  await admin.raw(`create database ${name} template template0 encoding 'UTF8' locale_provider icu icu_locale 'tr-TR' locale 'C.UTF-8'`);
  t.teardown(() => admin.raw(`drop database if exists ${name}`));
  const url = new URL(api.databaseUrl);
  url.pathname = `/${name}`;
  const turkish = createDb(url.toString(), 1);
  t.teardown(() => turkish.destroy());
  const tables = await readCaseTables((sql) => rows(turkish, sql));
  t.notOk(caseTablesMatch(tables), 'a Turkish ICU database maps case otherwise');
  const lowered = new Map([...tables.lower.from].map((c, i) => [c, [...tables.lower.to][i]]));
  const uppered = new Map([...tables.upper.from].map((c, i) => [c, [...tables.upper.to][i]]));
  t.equal(lowered.get('I'), 'ı', 'I lowers to dotless ı');
  t.equal(uppered.get('i'), 'İ', 'i uppers to dotted İ');
  const [row] = await rows<{ lowered: string }>(turkish, `select lower('ISTANBUL') as lowered`);
  t.equal([...'ISTANBUL'].map((c) => lowered.get(c) ?? c).join(''), row.lowered, 'the table says what lower() says there');
});

t.test('lower, upper and ? on Unicode text answer as PostgreSQL on both paths', async (t) => {
  await sameOnBoth(t, `fields=count&${q('lower(description) == "istanbul"')}`, [{ count: 3 }]);
  await sameOnBoth(t, 'fields=upper(description),count&group_by=upper(description)&order_by=asc(upper(description))',
    [{ 'upper(description)': 'ISTANBUL', count: 2 }, { 'upper(description)': 'STRASSE', count: 1 }, { 'upper(description)': 'STRAßE', count: 1 }, { 'upper(description)': 'İSTANBUL', count: 1 }]);
  await sameOnBoth(t, `fields=count&${q('description ? "*İ*"')}`, [{ count: 3 }]);
  await sameOnBoth(t, `fields=count&${q('description ? "*SS*"')}`, [{ count: 1 }]);
  await sameOnBoth(t, 'fields=count&description=?*ß*', [{ count: 1 }]);
});

t.test('a money literal with three decimals is rounded half-up to the cent, as the amount was stored', async (t) => {
  const created = await api.request('GET', `/transactions?${q('amount < 1.5')}&fields=amount&attrs[batch]=meaning&order_by=asc(amount)`);
  t.same(created.body.values.map((v: Record<string, unknown>) => v.amount), [1, 1, 1.01], '1.005 was stored as 1.01, 1.004 as 1.00');
  await sameOnBoth(t, `fields=count,sum(amount)&${q('amount == 1.005')}`, [{ count: 1, 'sum(amount)': 1.01 }]);
  await sameOnBoth(t, `fields=count&${q('amount == 1.0049999999999999999')}`, [{ count: 2 }]);
  await sameOnBoth(t, 'fields=count&amount=1.005', [{ count: 1 }]);
  await sameOnBoth(t, `fields=count&${q('amount >= 1.005')}`, [{ count: 3 }]);
});

t.test('values of functions keep their type in a list: text stays text, a date is YYYY-MM-DD', async (t) => {
  const res = await api.request('GET', `/transactions?fields=lower(order_number),attrs[code],date(created_at)&${q('order_number == "00123" || order_number == "A-1"')}&attrs[batch]=meaning&order_by=asc(order_number)`);
  t.equal(res.status, 200, JSON.stringify(res.body));
  const today = new Date().toISOString().slice(0, 10);
  t.same(res.body.values, [
    { 'lower(order_number)': '00123', 'attrs[code]': '007', 'date(created_at)': today },
    { 'lower(order_number)': 'a-1', 'attrs[code]': '7', 'date(created_at)': today },
  ]);
  await sameOnBoth(t, 'fields=attrs[code],date(created_at),count&group_by=attrs[code],date(created_at)&order_by=asc(attrs[code])',
    [{ 'attrs[code]': null, 'date(created_at)': today, count: 3 }, { 'attrs[code]': '007', 'date(created_at)': today, count: 1 }, { 'attrs[code]': '7', 'date(created_at)': today, count: 1 }]);
});

t.test('conv_fee filters and sums as the 0 rows show', async (t) => {
  const shown = await api.request('GET', '/transactions?fields=conv_fee&attrs[batch]=meaning');
  t.same(shown.body.values.map((v: Record<string, unknown>) => v.conv_fee), [0, 0, 0, 0, 0], 'every row shows 0');
  await sameOnBoth(t, `fields=count,sum(conv_fee)&${q('conv_fee == 0')}`, [{ count: 5, 'sum(conv_fee)': 0 }]);
  await sameOnBoth(t, `fields=count&${q('conv_fee == null')}`, [{ count: 0 }]);
  await sameOnBoth(t, 'fields=conv_fee,count&group_by=conv_fee', [{ conv_fee: 0, count: 5 }]);
});

t.test('a bare non-flag operand or a date against text is a 400 on both paths, and on lists (found by bench:fuzz)', async (t) => {
  for (const text of ['funding_delay', 'created_at', 'amount', 'attrs.batch == date(2024-01-31 10:00:00)', 'description == date(2024-01-31)']) {
    const { postgres, clickhouse } = await both(`fields=count&${q(text)}`);
    t.equal(postgres.status, 400, `postgres aggregate: ${text} ${JSON.stringify(postgres.body)}`);
    t.equal(clickhouse.status, 400, `clickhouse aggregate: ${text} ${JSON.stringify(clickhouse.body)}`);
    t.same(postgres.body, clickhouse.body, `the same error from both: ${text}`);
    const list = await api.request('GET', `/transactions?${q(text)}`);
    t.equal(list.status, 400, `list: ${text}`);
    t.equal(list.body.object, 'error');
  }
  for (const [route, text] of [['/customers', 'funding_delay'], ['/accounts', 'created_at'], ['/processing_accounts', 'attrs.tier == date(2024-01-31 10:00:00)']]) {
    const list = await api.request('GET', `${route}?${q(text)}`);
    t.equal(list.status, 400, `${route}: ${text} ${JSON.stringify(list.body)}`);
  }
  await sameOnBoth(t, `fields=count&${q('true')}`, [{ count: 5 }]);
});
