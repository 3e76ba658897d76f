/**
 * Lists and aggregates as CSV (`format=csv` or `Accept: text/csv`): the header names the fields as
 * requested, values are quoted per RFC 4180, money is in decimals, every matching row comes
 * without a limit, and an export over SETTLE_EXPORT_MAX_ROWS is a 400 naming the limit.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';
import { parseCsv } from './helpers/csv.ts';

const api = await startTestApi(t, { SETTLE_EXPORT_MAX_ROWS: '1500' });
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };

async function csv(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(api.url + path, { headers: { Authorization: `Bearer ${api.key}`, ...headers } });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

const tricky = 'Mug, "blue"\nsecond line';
await api.request('POST', '/customers', { json: { name: tricky, email: 'ann@example.com', attrs: { tier: 'gold' } } });
await api.request('POST', '/customers', { json: { name: 'Bob' } });
for (const amount of [7.99, 12, 0.5]) await api.request('POST', '/transactions', { json: { type: 'payment', amount, description: `Order ${amount}`, payment_method: CARD } });

t.test('a list with fields answers exactly those columns, nested ones as a.b, quoted per RFC 4180', async (t) => {
  const res = await csv('/customers?format=csv&fields=id,name,attrs.tier&order_by=created_at');
  t.equal(res.status, 200);
  t.match(res.type, /^text\/csv; charset=utf-8/);
  const rows = parseCsv(res.text);
  t.same(rows[0], ['id', 'name', 'attrs.tier']);
  t.equal(rows.length, 3);
  t.equal(rows[1][1], tricky, 'commas, quotes and a line break survive');
  t.equal(rows[1][2], 'gold');
  t.same(rows[2].slice(1), ['Bob', ''], 'a missing value is an empty cell');
  const json = (await api.request('GET', '/customers?fields=id,name,attrs.tier&order_by=created_at')).body.values;
  t.same(rows.slice(1).map((r) => r[0]), json.map((c: { id: string }) => c.id), 'the same rows as JSON, in the same order');
});

t.test('an object field named whole is flattened into its leaves, as the JSON shows them', async (t) => {
  const res = await csv('/accounts?format=csv&fields=name,contact_details&order_by=created_at&type=customer', { 'X-API-Version': 'v2' });
  t.equal(res.status, 200, res.text);
  const rows = parseCsv(res.text);
  t.same(rows[0], ['name', 'contact_details.email', 'contact_details.phone']);
  t.same(rows.slice(1).map((row) => row.slice(1)), [['ann@example.com', ''], ['', '']], 'one column per leaf, no JSON in a cell');
  const v1 = parseCsv((await csv('/customers?format=csv&fields=id,address&limit=1')).text)[0];
  t.same(v1, ['id', 'address.address_line_1', 'address.address_line_2', 'address.city', 'address.state_province', 'address.postal_code', 'address.country_code']);
});

t.test('Accept: text/csv answers CSV; without fields the header is every default field; money in decimals', async (t) => {
  const res = await csv('/transactions?order_by=created_at', { Accept: 'text/csv' });
  t.equal(res.status, 200);
  const rows = parseCsv(res.text);
  const header = rows[0];
  for (const column of ['id', 'object', 'amount', 'status', 'created_at']) t.ok(header.includes(column), column);
  const amounts = rows.slice(1).map((r) => r[header.indexOf('amount')]);
  t.same(amounts, ['7.99', '12', '0.5']);
  const v2 = parseCsv((await csv('/transactions?format=csv&fields=id,status.value,amount', { 'X-API-Version': 'v2' })).text);
  t.same(v2[0], ['id', 'status.value', 'amount']);
  t.same(v2.slice(1).map((r) => r[1]), ['processed', 'processed', 'processed']);
});

t.test('an aggregate answers CSV with its expressions as the header', async (t) => {
  const res = await csv('/customers?format=csv&fields=count');
  t.equal(res.status, 200, res.text);
  t.same(parseCsv(res.text), [['count'], ['2']]);
});

t.test('without a limit every matching row comes, up to SETTLE_EXPORT_MAX_ROWS; beyond it a 400 names the limit', async (t) => {
  await api.db.raw(`insert into accounts (id, org_id, environment, type, data)
    select 'acct_bulk' || lpad(g::text, 21, '0'), org_id, environment, 'customer', jsonb_build_object('name', 'Bulk ' || g)
      from accounts, generate_series(1, 1200) g where data->>'name' = 'Bob'`);
  const all = parseCsv((await csv('/customers?format=csv&fields=id')).text);
  t.equal(all.length, 1 + 1202, 'beyond the JSON page of 1000: every row');
  const limited = parseCsv((await csv('/customers?format=csv&fields=id&limit=5&offset=2')).text);
  t.equal(limited.length, 6, 'limit and offset as for JSON');
  const groups = parseCsv((await csv('/customers?format=csv&fields=name,count&group_by=name')).text);
  t.equal(groups.length, 1 + 1202, 'an aggregate without a limit: every group, beyond the JSON default of 1000');
  await api.db.raw(`insert into accounts (id, org_id, environment, type, data)
    select 'acct_more' || lpad(g::text, 21, '0'), org_id, environment, 'customer', jsonb_build_object('name', 'More ' || g)
      from accounts, generate_series(1, 400) g where data->>'name' = 'Bob'`);
  const over = await api.request('GET', '/customers?format=csv&fields=id');
  t.equal(over.status, 400);
  t.match(over.body.error_description, /1500/);
  t.match(over.body.error_description, /SETTLE_EXPORT_MAX_ROWS/);
  const overLimit = await api.request('GET', '/customers?format=csv&limit=2000');
  t.equal(overLimit.status, 400, 'a limit above the ceiling too');
  const overGroups = await api.request('GET', '/customers?format=csv&fields=name,count&group_by=name');
  t.equal(overGroups.status, 400, 'and an aggregate with more groups than the ceiling');
});

t.test('bad formats are a 400 in the error format, never a 500', async (t) => {
  const xml = await api.request('GET', '/customers?format=xml');
  t.equal(xml.status, 400);
  t.same(xml.body.details, { format: 'expected json, csv or parquet' });
  const parquet = await api.request('GET', '/customers?format=parquet');
  t.equal(parquet.status, 400);
  t.match(parquet.body.details, { format: String });
  const unknown = await api.request('GET', '/customers?format=csv&fields=id,nope');
  t.equal(unknown.status, 400, 'an unknown field before the answer starts');
  const twice = await api.request('GET', '/customers?format=csv&format=json');
  t.equal(twice.status, 400);
});
