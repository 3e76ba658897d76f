/**
 * Every query encoding of CONTRACT §5 over HTTP, against /customers (v1) and /accounts (v2):
 * filters and their operators, fields / order_by / group_by in their encodings, paging, `q`,
 * and the errors a client sees when it gets them wrong.
 */
import t, { type Test } from 'tap';
import { startTestApi, type ApiResponse } from './helpers/api.ts';

const api = await startTestApi(t);
// An org of its own, so every list below is exactly the fixture.
const key = await api.newKey('query-http', 'test');
// The fixtures below are this environment's only accounts: the default processing account a new
// org starts with (CONTRACT §3) is deleted first.
for (const account of (await api.request('GET', '/processing_accounts', { key })).body.values) {
  const deleted = await api.request('DELETE', `/processing_accounts/${account.id}`, { key });
  if (deleted.status !== 200) throw new Error(`setup: ${JSON.stringify(deleted.body)}`);
}

type Params = Array<[string, string]> | Record<string, string>;

/** Builds `path?k=v&…` with each key and value percent-encoded, so `q` text reaches the server verbatim. */
function url(path: string, params: Params = []): string {
  const pairs = Array.isArray(params) ? params : Object.entries(params);
  if (pairs.length === 0) return path;
  return `${path}?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}`;
}

async function v1(path: string, params: Params = []): Promise<ApiResponse> {
  return api.request('GET', url(path, params), { key });
}

async function v2(path: string, params: Params = []): Promise<ApiResponse> {
  return api.request('GET', url(path, params), { key, version: 'v2' });
}

function ok(t: Test, res: ApiResponse, label = 'status 200'): any[] {
  t.equal(res.status, 200, `${label}: ${res.status === 200 ? 'ok' : JSON.stringify(res.body)}`);
  t.equal(res.body?.object, 'list');
  return Array.isArray(res.body?.values) ? res.body.values : [];
}

const names = (values: any[]) => values.map((v) => v.name);
const sorted = (values: string[]) => [...values].sort();

// ---------- fixture ----------

interface CustomerSeed {
  name: string;
  email?: string;
  city?: string;
  tier?: string;
  /** backdated creation time (UTC); absent → now */
  createdAt?: string;
}

// Created in this order; the backdated ones keep the default created_at order Ann, Bob, Cy, then the rest.
const seeds: CustomerSeed[] = [
  { name: 'Ann', email: 'ann@example.com', city: 'Austin', tier: 'gold', createdAt: '2023-01-15T10:00:00Z' },
  { name: 'Bob', email: 'bob@example.com', city: 'Boston', tier: 'silver', createdAt: '2023-02-15T10:00:00Z' },
  { name: 'Cy', city: 'Austin', tier: 'gold', createdAt: '2023-03-15T10:00:00Z' },
  { name: 'Dee', email: 'dee@test.org', city: 'Denver' },
  { name: 'ANN', email: 'ann2@example.org', city: 'Austin', tier: 'bronze' },
  { name: "O'Neil", email: 'oneil@test.org', city: 'Austin' },
];

const ids: Record<string, string> = {};
const createdAt: Record<string, Date> = {};
for (const seed of seeds) {
  const body: Record<string, unknown> = { name: seed.name };
  if (seed.email) body.email = seed.email;
  if (seed.city) body.address = { city: seed.city };
  if (seed.tier) body.attrs = { tier: seed.tier };
  const res = await api.request('POST', '/customers', { key, json: body });
  if (res.status !== 200) throw new Error(`fixture: ${JSON.stringify(res.body)}`);
  ids[seed.name] = res.body.id;
  if (seed.createdAt) await api.db('accounts').where({ id: res.body.id }).update({ created_at: seed.createdAt, modified_at: seed.createdAt });
  const row = await api.db('accounts').where({ id: res.body.id }).first();
  createdAt[seed.name] = new Date(row.created_at);
}
// Three processing accounts with funding delays 1, 3 and 5, for numeric comparisons in v2.
for (const [name, delay] of [['Shop 1', 1], ['Shop 3', 3], ['Shop 5', 5]] as const) {
  const res = await api.request('POST', '/accounts', {
    key,
    version: 'v2',
    json: { type: 'processing', name, processing: { settings: { funding: { delay } } } },
  });
  if (res.status !== 200) throw new Error(`fixture: ${JSON.stringify(res.body)}`);
  ids[name] = res.body.id;
  const row = await api.db('accounts').where({ id: res.body.id }).first();
  createdAt[name] = new Date(row.created_at);
}
const customerNames = seeds.map((s) => s.name);
const allNames = [...customerNames, 'Shop 1', 'Shop 3', 'Shop 5'];

// ---------- filters ----------

t.test('a plain filter is equality, case-sensitive on text', async (t) => {
  t.same(names(ok(t, await v1('/customers', { name: 'Ann' }))), ['Ann']);
  t.same(names(ok(t, await v1('/customers', { email: 'bob@example.com' }))), ['Bob']);
  t.same(names(ok(t, await v1('/customers', { name: 'Nobody' }))), [], 'no match is an empty list, not 404');
});

t.test('!v is not-equal and keeps rows whose field is empty', async (t) => {
  t.same(names(ok(t, await v1('/customers', { name: '!Ann' }))), customerNames.filter((n) => n !== 'Ann'));
  t.same(names(ok(t, await v1('/customers', { email: '!bob@example.com' }))), customerNames.filter((n) => n !== 'Bob'), 'Cy has no email and is still "not bob"');
});

t.test('null and !null filter on emptiness', async (t) => {
  t.same(names(ok(t, await v1('/customers', { email: 'null' }))), ['Cy']);
  t.same(names(ok(t, await v1('/customers', { email: '!null' }))), customerNames.filter((n) => n !== 'Cy'));
});

t.test('<, <=, >, >= compare datetimes in v1', async (t) => {
  const bob = '2023-02-15 10:00:00';
  t.same(names(ok(t, await v1('/customers', { created_at: `<${bob}` }))), ['Ann']);
  t.same(names(ok(t, await v1('/customers', { created_at: `<=${bob}` }))), ['Ann', 'Bob']);
  t.same(names(ok(t, await v1('/customers', { created_at: `>${bob}` }))), customerNames.slice(2));
  t.same(names(ok(t, await v1('/customers', { created_at: `>=${bob}` }))), customerNames.slice(1));
});

t.test('<, <=, >, >= compare numbers in v2 nested fields, numerically', async (t) => {
  const key = 'processing[settings][funding][delay]';
  t.same(names(ok(t, await v2('/accounts', { [key]: '<3' }))), ['Shop 1']);
  t.same(names(ok(t, await v2('/accounts', { [key]: '<=3' }))), ['Shop 1', 'Shop 3']);
  t.same(names(ok(t, await v2('/accounts', { [key]: '>3' }))), ['Shop 5']);
  t.same(names(ok(t, await v2('/accounts', { [key]: '>=3' }))), ['Shop 3', 'Shop 5']);
  t.same(names(ok(t, await v2('/accounts', { [key]: '>10' }))), [], '"5" > "10" as text would match; as a number it does not');
  t.same(names(ok(t, await v2('/accounts', { [key]: '3' }))), ['Shop 3']);
});

t.test('?*v* is a like match with * as the wildcard', async (t) => {
  t.same(names(ok(t, await v1('/customers', { email: '?*@example.com' }))), ['Ann', 'Bob']);
  t.same(names(ok(t, await v1('/customers', { email: '?*@test*' }))), ['Dee', "O'Neil"]);
  t.same(names(ok(t, await v1('/customers', { email: '?ann@*' }))), ['Ann'], 'a leading literal anchors the match');
  t.same(names(ok(t, await v1('/customers', { email: '?%' }))), [], '% is a literal character, not a SQL wildcard');
  t.same(names(ok(t, await v1('/customers', { email: '?___@example.com' }))), [], '_ is a literal character, not a SQL wildcard');
});

t.test('a|b is an OR of alternatives, each with its own operator', async (t) => {
  t.same(names(ok(t, await v1('/customers', { name: 'Ann|Bob' }))), ['Ann', 'Bob']);
  t.same(names(ok(t, await v1('/customers', { name: 'Ann|Nobody|Cy' }))), ['Ann', 'Cy']);
  t.same(names(ok(t, await v2('/accounts', { 'processing[settings][funding][delay]': '1|>4' }))), ['Shop 1', 'Shop 5']);
});

t.test('a repeated key is an AND (created_at=>X&created_at=<Y)', async (t) => {
  const res = await v1('/customers', [['created_at', '>2023-01-01'], ['created_at', '<2023-03-01']]);
  t.same(names(ok(t, res)), ['Ann', 'Bob']);
  const two = await v1('/customers', [['name', '!Ann'], ['name', '!Bob'], ['address[city]', 'Austin']]);
  t.same(names(ok(t, two)), ['Cy', 'ANN', "O'Neil"]);
});

t.test('filters on different keys are ANDed', async (t) => {
  t.same(names(ok(t, await v1('/customers', { 'address[city]': 'Austin', 'attrs[tier]': 'gold' }))), ['Ann', 'Cy']);
});

t.test('dates in a filter accept YYYY-MM-DD, datetime, ISO-8601 and M/D/YYYY', async (t) => {
  for (const form of ['2023-02-01', '2023-02-01 00:00:00', '2023-02-01T00:00:00Z', '2023-02-01T01:00:00+01:00', '2/1/2023', '2/1/2023 12:00:00 AM']) {
    t.same(names(ok(t, await v1('/customers', [['created_at', `>=${form}`], ['created_at', '<2023-03-01']]), form)), ['Bob'], form);
  }
  const bad = await v1('/customers', { created_at: '>yesterday' });
  t.equal(bad.status, 400, 'an unparseable date is refused');
  t.equal(bad.body.error_type, 'InvalidAttributes');
});

t.test('nested fields filter with brackets: address[city]', async (t) => {
  t.same(names(ok(t, await v1('/customers', { 'address[city]': 'Austin' }))), ['Ann', 'Cy', 'ANN', "O'Neil"]);
  t.same(names(ok(t, await v2('/accounts', { 'address[city]': 'Denver' }))), ['Dee']);
});

t.test('custom attributes filter with attrs[name]', async (t) => {
  t.same(names(ok(t, await v1('/customers', { 'attrs[tier]': 'gold' }))), ['Ann', 'Cy']);
  t.same(names(ok(t, await v1('/customers', { 'attrs[tier]': 'gold|silver' }))), ['Ann', 'Bob', 'Cy']);
  t.same(names(ok(t, await v2('/accounts', { 'attrs[tier]': 'bronze' }))), ['ANN']);
  t.same(names(ok(t, await v1('/customers', { 'attrs[unknown_attr]': 'x' }))), [], 'an attribute nobody set matches nothing (not an error)');
});

t.test('v2 filters use v2 paths: contact_details[email], type', async (t) => {
  t.same(names(ok(t, await v2('/accounts', { 'contact_details[email]': 'ann@example.com' }))), ['Ann']);
  t.same(names(ok(t, await v2('/accounts', { type: 'processing' }))), ['Shop 1', 'Shop 3', 'Shop 5']);
  t.same(names(ok(t, await v2('/accounts', { type: 'customer' }))), customerNames);
  const v1Name = await v2('/accounts', { email: 'ann@example.com' });
  t.equal(v1Name.status, 400, 'the v1 name `email` is not a v2 field');
  t.equal(v1Name.body.error_type, 'InvalidAttributes');
});

t.test('function keys: month(created_at) and lower(name)', async (t) => {
  const now = new Date();
  const month = now.getUTCMonth() + 1;
  const expected = customerNames.filter((n) => createdAt[n].getUTCMonth() + 1 === month);
  t.ok(expected.length > 0 && expected.length < customerNames.length, 'the fixture has rows in and out of this month');
  t.same(names(ok(t, await v1('/customers', { 'month(created_at)': String(month) }))), expected);
  t.same(names(ok(t, await v1('/customers', { 'year(created_at)': '2023' }))), ['Ann', 'Bob', 'Cy']);
  t.same(names(ok(t, await v1('/customers', { 'lower(name)': 'ann' }))), ['Ann', 'ANN'], 'lower() makes the match case-insensitive');
  t.same(names(ok(t, await v1('/customers', { 'upper(name)': 'ANN' }))), ['Ann', 'ANN']);
  t.same(names(ok(t, await v2('/accounts', { 'lower(contact_details[email])': 'ann@example.com' }))), ['Ann']);
  const unknown = await v1('/customers', { 'nosuchfn(name)': 'x' });
  t.equal(unknown.status, 400, 'an unknown function is refused');
  t.equal(unknown.body.object, 'error');
});

// ---------- fields ----------

t.test('fields in its three encodings projects the same keys', async (t) => {
  const encodings: Array<[string, Params]> = [
    ['fields=id,name', [['fields', 'id,name'], ['name', 'Ann']]],
    ['fields[]=id&fields[]=name', [['fields[]', 'id'], ['fields[]', 'name'], ['name', 'Ann']]],
    ['fields[0]=id&fields[1]=name', [['fields[0]', 'id'], ['fields[1]', 'name'], ['name', 'Ann']]],
  ];
  for (const [label, params] of encodings) {
    const values = ok(t, await v1('/customers', params), label);
    t.equal(values.length, 1, label);
    t.equal(values[0]?.id, ids.Ann, `${label}: id`);
    t.equal(values[0]?.name, 'Ann', `${label}: name`);
    t.notOk('email' in (values[0] ?? {}), `${label}: email left out`);
    t.notOk('address' in (values[0] ?? {}), `${label}: address left out`);
    t.notOk('created_at' in (values[0] ?? {}), `${label}: created_at left out`);
  }
});

t.test('fields[n] keeps the index order, not the order of the parameters', async (t) => {
  const values = ok(t, await v1('/customers', [['fields[1]', 'name'], ['fields[0]', 'email'], ['name', 'Ann']]));
  t.same(Object.keys(values[0] ?? {}), ['email', 'name'], 'the fields in index order');
});

t.test('fields=* is the default rendering; fields=*,x adds to it', async (t) => {
  const plain = ok(t, await v1('/customers', { name: 'Ann' }));
  const star = ok(t, await v1('/customers', { name: 'Ann', fields: '*' }));
  t.same(star, plain);
  t.equal(plain[0]?.object, 'customer');
  t.equal(plain[0]?.email, 'ann@example.com');
  const starName = ok(t, await v1('/customers', { name: 'Ann', fields: '*,name' }));
  t.same(starName, plain);
});

t.test('fields picks nested v2 paths', async (t) => {
  const values = ok(t, await v2('/accounts', { 'contact_details[email]': 'ann@example.com', fields: 'id,contact_details.email' }));
  t.same(values, [{ id: ids.Ann, contact_details: { email: 'ann@example.com' } }]);
});

t.test('fields also applies to get-one and create', async (t) => {
  const got = await api.request('GET', `/customers/${ids.Ann}?fields=id,email`, { key });
  t.equal(got.status, 200);
  t.equal(got.body.id, ids.Ann);
  t.equal(got.body.email, 'ann@example.com');
  t.notOk('name' in got.body, 'name left out');
  const created = await api.request('POST', '/customers?fields=id,name', { key, json: { name: 'Projected', email: 'p@example.com' } });
  t.equal(created.status, 200);
  t.equal(created.body.name, 'Projected');
  t.notOk('email' in created.body, 'email left out of the create answer');
  t.equal((await api.db('accounts').where({ id: created.body.id }).first()).data.email, 'p@example.com', 'but stored');
  await api.request('DELETE', `/customers/${created.body.id}`, { key });
});

// A partial object carries exactly the fields named: libraries hand `{"id": …}` back as a plain map
// (Python's `.get("id")`), so `object` comes only when named or with `*`.
t.test('fields answers exactly the named fields: object only when named or with *', async (t) => {
  const got = await api.request('GET', `/customers/${ids.Ann}?fields=id`, { key });
  t.same(got.body, { id: ids.Ann }, 'get-one');
  const v2got = await api.request('GET', `/accounts/${ids.Ann}?fields=id`, { key, version: 'v2' });
  t.same(v2got.body, { id: ids.Ann }, 'v2 get-one');
  const listed = await api.request('GET', `/customers?id=${ids.Ann}&fields[]=id`, { key });
  t.same(listed.body, { object: 'list', values: [{ id: ids.Ann }] }, 'a list keeps its own object key; its items carry what was named');
  const named = await api.request('GET', `/customers/${ids.Ann}?fields=id,object`, { key });
  t.same(named.body, { id: ids.Ann, object: 'customer' }, 'object when named');
  const star = await api.request('GET', `/customers/${ids.Ann}?fields=*`, { key });
  t.equal(star.body.object, 'customer', 'object with *');
  const created = await api.request('POST', '/customers?fields=id', { key, json: { name: 'Only id' } });
  t.same(Object.keys(created.body), ['id'], 'create');
  const updated = await api.request('PUT', `/customers/${ids.Ann}?fields=id`, { key, json: { email: 'ann@example.com' } });
  t.same(updated.body, { id: ids.Ann }, 'update');
  await api.request('DELETE', `/customers/${created.body.id}`, { key });
});

t.test('fields naming an unknown field is 400 InvalidAttributes', async (t) => {
  const res = await v1('/customers', { fields: 'id,nope' });
  t.equal(res.status, 400);
  t.equal(res.body.error_type, 'InvalidAttributes');
  t.match(res.body.details, { nope: String });
});

// ---------- order_by, limit, offset ----------

const noAnn = ['name', '!ANN'] as [string, string]; // keeps case-insensitive collations out of the sort

t.test('order_by=name sorts ascending', async (t) => {
  const values = ok(t, await v1('/customers', [noAnn, ['order_by', 'name']]));
  t.same(names(values), ['Ann', 'Bob', 'Cy', 'Dee', "O'Neil"]);
});

t.test('order_by[0]=desc(name) sorts descending; asc(name) ascending', async (t) => {
  t.same(names(ok(t, await v1('/customers', [noAnn, ['order_by[0]', 'desc(name)']]))), ["O'Neil", 'Dee', 'Cy', 'Bob', 'Ann']);
  t.same(names(ok(t, await v1('/customers', [noAnn, ['order_by', 'asc(name)']]))), ['Ann', 'Bob', 'Cy', 'Dee', "O'Neil"]);
  t.same(names(ok(t, await v1('/customers', [noAnn, ['order_by[]', 'desc(name)']]))), ["O'Neil", 'Dee', 'Cy', 'Bob', 'Ann']);
});

t.test('several order_by terms sort by each in turn', async (t) => {
  const values = ok(t, await v1('/customers', [noAnn, ['order_by[0]', 'address.city'], ['order_by[1]', 'desc(name)']]));
  t.same(names(values), ["O'Neil", 'Cy', 'Ann', 'Bob', 'Dee']);
});

t.test('order_by on a v2 nested number sorts numerically', async (t) => {
  const values = ok(t, await v2('/accounts', { type: 'processing', order_by: 'desc(processing.settings.funding.delay)' }));
  t.same(names(values), ['Shop 5', 'Shop 3', 'Shop 1']);
});

t.test('the default order is created_at ascending', async (t) => {
  t.same(names(ok(t, await v1('/customers'))), customerNames);
  t.same(names(ok(t, await v2('/accounts'))), allNames);
});

t.test('a misspelt order direction is 400', async (t) => {
  const res = await v1('/customers', { order_by: 'descending(name)' });
  t.equal(res.status, 400);
  t.equal(res.body.error_type, 'BadRequest');
});

t.test('limit and offset page through the list without gaps or repeats', async (t) => {
  const seen: string[] = [];
  for (let offset = 0; offset < 12; offset += 2) {
    const page = ok(t, await v2('/accounts', { limit: '2', offset: String(offset) }));
    t.ok(page.length <= 2, `page at ${offset} holds at most 2`);
    seen.push(...names(page));
  }
  t.same(seen, allNames);
  t.same(names(ok(t, await v1('/customers', { limit: '0' }))), [], 'limit=0 is an empty page');
  t.same(names(ok(t, await v1('/customers', { offset: '100' }))), [], 'an offset past the end is an empty page');
  t.same(names(ok(t, await v1('/customers', { limit: '10000' }))), customerNames, 'limit=10000 is allowed');
});

t.test('limit over 10000, negative or not a number is 400 BadRequest', async (t) => {
  for (const [param, value] of [['limit', '10001'], ['limit', '-1'], ['limit', 'ten'], ['offset', '-5'], ['offset', '1.5']]) {
    const res = await v1('/customers', { [param]: value });
    t.equal(res.status, 400, `${param}=${value}`);
    t.equal(res.body.error_type, 'BadRequest', `${param}=${value}`);
    t.ok(res.body.details && param in res.body.details, `${param}=${value}: details name ${param}`);
  }
});

// ---------- q ----------

async function q(version: 'v1' | 'v2', path: string, text: string, extra: Params = []): Promise<any[]> {
  const params = [['q', text] as [string, string], ...(Array.isArray(extra) ? extra : Object.entries(extra))];
  const res = version === 'v1' ? await v1(path, params) : await v2(path, params);
  if (res.status !== 200) throw new Error(`q=${text}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.values;
}

t.test('q: == with double- and single-quoted strings, in both versions', async (t) => {
  t.same(names(await q('v1', '/customers', 'name == "Ann"')), ['Ann']);
  t.same(names(await q('v1', '/customers', "name == 'Ann'")), ['Ann']);
  t.same(names(await q('v2', '/accounts', 'name == "Ann"')), ['Ann']);
  t.same(names(await q('v2', '/accounts', "name == 'Ann'")), ['Ann']);
});

t.test('q: quotes inside strings (escaped single quote, single inside double)', async (t) => {
  t.same(names(await q('v1', '/customers', `name == "O'Neil"`)), ["O'Neil"]);
  t.same(names(await q('v1', '/customers', String.raw`name == 'O\'Neil'`)), ["O'Neil"]);
  t.same(names(await q('v1', '/customers', String.raw`name == "O\u0027Neil"`)), ["O'Neil"], 'JSON \\u escapes in double quotes');
});

t.test('q: && binds tighter than ||', async (t) => {
  // Ann || (Bob && email == null) → Ann; a left-to-right reading (Ann || Bob) && email == null → nobody.
  t.same(names(await q('v1', '/customers', 'name == "Ann" || name == "Bob" && email == null')), ['Ann']);
  t.same(names(await q('v2', '/accounts', 'name == "Ann" || name == "Bob" && contact_details.email == null')), ['Ann']);
});

t.test('q: parentheses override precedence', async (t) => {
  t.same(names(await q('v1', '/customers', '(name == "Ann" || name == "Bob") && email == null')), []);
  t.same(names(await q('v1', '/customers', '(name == "Ann" || name == "Cy") && email == null')), ['Cy']);
  t.same(names(await q('v1', '/customers', '!(name == "Ann" || address.city == "Austin")')), ['Bob', 'Dee']);
});

t.test('q: != null and == null', async (t) => {
  t.same(names(await q('v1', '/customers', 'email != null')), customerNames.filter((n) => n !== 'Cy'));
  t.same(names(await q('v1', '/customers', 'email == null')), ['Cy']);
  t.same(names(await q('v2', '/accounts', 'contact_details.email == null && type == "customer"')), ['Cy']);
});

t.test('q: date(YYYY-MM-DD) and date(YYYY-MM-DD HH:MM:SS) compare with datetimes', async (t) => {
  t.same(names(await q('v1', '/customers', 'created_at >= date(2023-02-01) && created_at < date(2023-03-01)')), ['Bob']);
  t.same(names(await q('v1', '/customers', 'created_at > date(2023-02-15 10:00:00)')), customerNames.slice(2));
  t.same(names(await q('v1', '/customers', 'created_at >= date(2023-02-15 10:00:00) && created_at <= date(2023-02-15 10:00:00)')), ['Bob']);
  t.same(names(await q('v2', '/accounts', 'created_at < date(2023-02-01)')), ['Ann']);
  t.same(names(await q('v1', '/customers', 'date(2023-02-01) > created_at')), ['Ann'], 'a literal on the left');
});

t.test('q: v2 paths contact_details.email and contact_details[email]', async (t) => {
  t.same(names(await q('v2', '/accounts', 'contact_details.email == "bob@example.com"')), ['Bob']);
  t.same(names(await q('v2', '/accounts', 'contact_details[email] == "bob@example.com"')), ['Bob']);
  t.same(names(await q('v2', '/accounts', "contact_details['email'] == 'bob@example.com'")), ['Bob']);
});

t.test('q: custom attributes as attrs.tier and attrs[tier]', async (t) => {
  t.same(names(await q('v1', '/customers', 'attrs.tier == "gold"')), ['Ann', 'Cy']);
  t.same(names(await q('v1', '/customers', "attrs[tier] == 'gold'")), ['Ann', 'Cy']);
  t.same(names(await q('v2', '/accounts', 'attrs.tier != null')), ['Ann', 'Bob', 'Cy', 'ANN']);
});

t.test('q: like, functions, numbers and comparison operators', async (t) => {
  t.same(names(await q('v1', '/customers', 'email ? "*@test.org"')), ['Dee', "O'Neil"]);
  t.same(names(await q('v1', '/customers', 'lower(name) == "ann"')), ['Ann', 'ANN']);
  t.same(names(await q('v2', '/accounts', 'processing.settings.funding.delay >= 3')), ['Shop 3', 'Shop 5']);
  t.same(names(await q('v2', '/accounts', 'processing.settings.funding.delay != 3 && type == "processing"')), ['Shop 1', 'Shop 5']);
  t.same(names(await q('v2', '/accounts', '3 < processing.settings.funding.delay')), ['Shop 5'], 'a literal on the left flips the comparison');
  t.same(names(await q('v1', '/customers', `month(created_at) == ${new Date().getUTCMonth() + 1} && year(created_at) == ${new Date().getUTCFullYear()}`)),
    customerNames.filter((n) => createdAt[n].getUTCFullYear() === new Date().getUTCFullYear() && createdAt[n].getUTCMonth() === new Date().getUTCMonth()));
});

t.test('q combines with filters, order_by and limit', async (t) => {
  const values = await q('v1', '/customers', 'address.city == "Austin"', [['name', '!ANN'], ['order_by', 'desc(name)'], ['limit', '2']]);
  t.same(names(values), ["O'Neil", 'Cy']);
});

t.test('q: an empty q is no condition', async (t) => {
  t.same(names(await q('v1', '/customers', '')), customerNames);
});

t.test('q: a syntax error is 400 BadRequest with details.q naming the position', async (t) => {
  for (const text of ['name ==', 'name == "Ann" &&', '(name == "Ann"', 'name == "unterminated', 'name === "Ann"', 'name == "Ann" )', '&& name']) {
    for (const version of ['v1', 'v2'] as const) {
      const res = version === 'v1' ? await v1('/customers', { q: text }) : await v2('/accounts', { q: text });
      t.equal(res.status, 400, `${version} q=${text}`);
      t.equal(res.body.error_type, 'BadRequest', `${version} q=${text}`);
      t.match(res.body.details?.q, /position \d+/, `${version} q=${text}: ${res.body.details?.q}`);
    }
  }
  const res = await v1('/customers', { q: 'name == "Ann" )' });
  t.match(res.body.details.q, /position 14$/, 'the position is the offset of the offending token');
});

t.test('q: an unknown field is 400 InvalidAttributes', async (t) => {
  const res = await v1('/customers', { q: 'nope == 1' });
  t.equal(res.status, 400);
  t.equal(res.body.error_type, 'InvalidAttributes');
  t.match(res.body.details, { nope: String });
});

// ---------- errors ----------

t.test('an unknown filter field is 400 InvalidAttributes naming it', async (t) => {
  for (const [version, path, field] of [['v1', '/customers', 'nope'], ['v2', '/accounts', 'nope'], ['v1', '/customers', 'address[nope]'], ['v2', '/accounts', 'contact_details[nope]']] as const) {
    const res = version === 'v1' ? await v1(path, { [field]: 'x' }) : await v2(path, { [field]: 'x' });
    t.equal(res.status, 400, `${version} ${field}`);
    t.equal(res.body.object, 'error');
    t.equal(res.body.error_type, 'InvalidAttributes', `${version} ${field}`);
    t.match(res.body.error_description, field.replace('[', '.').replace(']', '').split('.')[0], `${version} ${field}: description names the field`);
  }
});

t.test('a filter value of the wrong type is 400 InvalidAttributes', async (t) => {
  const res = await v2('/accounts', { 'processing[settings][funding][delay]': '>many' });
  t.equal(res.status, 400);
  t.equal(res.body.error_type, 'InvalidAttributes');
});

async function snapshot(): Promise<unknown[]> {
  return api.db('accounts').select('id', 'data', 'modified_at').orderBy('id');
}

t.test('update by query without mode=query is 400 and changes nothing', async (t) => {
  const before = await snapshot();
  const res = await api.request('PUT', url('/customers', { name: 'Ann' }), { key, json: { phone: '111' } });
  t.equal(res.status, 400);
  t.equal(res.body.error_type, 'BadRequest');
  t.match(res.body.details, { mode: String });
  const v2res = await api.request('PUT', url('/accounts', { q: 'type == "customer"' }), { key, version: 'v2', json: { name: 'Everyone' } });
  t.equal(v2res.status, 400);
  t.equal(v2res.body.error_type, 'BadRequest');
  t.same(await snapshot(), before, 'no stored row changed');
});

t.test('delete by query without mode=query is 400 and deletes nothing', async (t) => {
  const before = await snapshot();
  const res = await api.request('DELETE', url('/customers', { name: 'Ann' }), { key });
  t.equal(res.status, 400);
  t.equal(res.body.error_type, 'BadRequest');
  const bare = await api.request('DELETE', '/customers', { key });
  t.equal(bare.status, 400, 'a bare DELETE of the collection is refused');
  const v2res = await api.request('DELETE', url('/accounts', { type: 'customer' }), { key, version: 'v2' });
  t.equal(v2res.status, 400);
  t.same(await snapshot(), before, 'no stored row deleted');
});

t.test('update by query with mode=query changes exactly the matching rows', async (t) => {
  const before = await api.db('accounts').whereNot({ id: ids.Cy }).select('id', 'data', 'modified_at').orderBy('id');
  const res = await api.request('PUT', url('/customers', { q: 'email == null', mode: 'query' }), { key, json: { phone: '555-0100' } });
  t.equal(res.status, 200);
  t.same(res.body.values.map((v: any) => [v.name, v.phone]), [['Cy', '555-0100']]);
  const stored = await api.db('accounts').where({ id: ids.Cy }).first();
  t.equal(stored.data.phone, '555-0100');
  t.same(await api.db('accounts').whereNot({ id: ids.Cy }).select('id', 'data', 'modified_at').orderBy('id'), before, 'other rows untouched');
});

// ---------- group_by and aggregates ----------

t.test('group_by with count gives rows keyed by the requested expressions', async (t) => {
  const values = ok(t, await v2('/accounts', { fields: 'type,count', group_by: 'type', order_by: 'type' }));
  t.same(values, [{ type: 'customer', count: customerNames.length }, { type: 'processing', count: 3 }]);
});

t.test('group_by in its list encodings gives the same rows', async (t) => {
  const expected = [{ type: 'customer', count: customerNames.length }, { type: 'processing', count: 3 }];
  t.same(ok(t, await v2('/accounts', [['fields[]', 'type'], ['fields[]', 'count'], ['group_by[]', 'type'], ['order_by', 'type']])), expected);
  t.same(ok(t, await v2('/accounts', [['fields[0]', 'type'], ['fields[1]', 'count'], ['group_by[0]', 'type'], ['order_by[0]', 'type']])), expected);
});

t.test('aggregates over a v2 nested number: sum, avg, min, max, count(field)', async (t) => {
  const path = 'processing.settings.funding.delay';
  const values = ok(t, await v2('/accounts', { type: 'processing', fields: `sum(${path}),avg(${path}),min(${path}),max(${path}),count(${path}),count` }));
  t.same(values, [{ [`sum(${path})`]: 9, [`avg(${path})`]: 3, [`min(${path})`]: 1, [`max(${path})`]: 5, [`count(${path})`]: 3, count: 3 }]);
});

t.test('count alone counts the rows a filter matches', async (t) => {
  t.same(ok(t, await v1('/customers', { fields: 'count', 'address[city]': 'Austin' })), [{ count: 4 }]);
  t.same(ok(t, await v2('/accounts', { fields: 'count' })), [{ count: allNames.length }]);
});

t.test('group_by a function of a column, keyed exactly as requested', async (t) => {
  const byYear = ok(t, await v1('/customers', { fields: 'year(created_at),count', group_by: 'year(created_at)', order_by: 'year(created_at)' }));
  t.same(byYear, [{ 'year(created_at)': 2023, count: 3 }, { 'year(created_at)': new Date().getUTCFullYear(), count: 3 }]);
});

// Grouping by anything stored in the jsonb `data` column fails: the path is bound twice ($1 in
// select, $5 in group by) and Postgres cannot tell the two expressions are the same → 500.

t.test('group_by a custom attribute, keyed exactly as requested', async (t) => {
  const byTier = ok(t, await v1('/customers', { fields: 'attrs[tier],count', group_by: 'attrs[tier]', order_by: 'attrs[tier]' }));
  t.same(byTier, [{ 'attrs[tier]': null, count: 2 }, { 'attrs[tier]': 'bronze', count: 1 }, { 'attrs[tier]': 'gold', count: 2 }, { 'attrs[tier]': 'silver', count: 1 }]);
});

t.test('group_by a stored field (address.city, v2 nested number)', async (t) => {
  const byCity = ok(t, await v1('/customers', { fields: 'address.city,count', group_by: 'address.city', order_by: 'desc(count)', limit: '1' }));
  t.same(byCity, [{ 'address.city': 'Austin', count: 4 }]);
  const path = 'processing.settings.funding.delay';
  const byDelay = ok(t, await v2('/accounts', { type: 'processing', fields: `${path},count`, group_by: path, order_by: path }));
  t.same(byDelay, [{ [path]: 1, count: 1 }, { [path]: 3, count: 1 }, { [path]: 5, count: 1 }]);
});

t.test('an aggregate query may order by the aggregate', async (t) => {
  const values = ok(t, await v2('/accounts', { fields: 'type,count', group_by: 'type', order_by: 'desc(count)', limit: '1' }));
  t.same(values, [{ type: 'customer', count: customerNames.length }]);
  const asc = ok(t, await v2('/accounts', { fields: 'type,count', group_by: 'type', order_by: 'asc(count)', limit: '1' }));
  t.same(asc, [{ type: 'processing', count: 3 }]);
});

t.test('a field neither grouped nor aggregated is 400', async (t) => {
  const res = await v2('/accounts', { fields: 'type,name,count', group_by: 'type' });
  t.equal(res.status, 400);
  t.equal(res.body.object, 'error');
  t.match(res.body.details, { name: String });
});

t.test('an aggregate in a filter is 400, not a database error', async (t) => {
  const res = await v1('/customers', { 'count(name)': '>1' });
  t.equal(res.status, 400);
  t.equal(res.body.object, 'error');
});

// Functions and aggregates are compiled without checking their argument's type, so Postgres
// refuses the SQL (42883 undefined function / 42P18 indeterminate type) and the client gets a 500.
t.test('a function or aggregate over a field of the wrong type is 400, not 500', async (t) => {
  const cases: Params[] = [
    { q: 'abs(name) > 1' },
    { 'month(name)': '1' },
    { q: 'created_at > name' },
    { q: 'unix_timestamp(false) == id' },
    { fields: 'sum(name)' },
    { fields: 'avg(attrs.tier)' },
    { fields: 'count(1)' },
  ];
  for (const params of cases) {
    const res = await v1('/customers', params);
    t.equal(res.status, 400, `${new URLSearchParams(params as Record<string, string>)}: ${JSON.stringify(res.body)}`);
  }
});

t.test('a scalar function in fields of a plain list is returned under its expression', async (t) => {
  const values = ok(t, await v1('/customers', { name: 'ANN', fields: 'id,lower(name)' }));
  t.same(values, [{ id: ids.ANN, 'lower(name)': 'ann' }]);
});
