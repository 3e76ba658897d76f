/**
 * Restricted keys and rotation, as an operator makes them with the CLI and a client uses them: a
 * key scoped to `<collection>:read|write` reaches only those collections (403 naming the scope it
 * lacks elsewhere; e-mailing an invoice, which may make a payment link, needs both scopes), an
 * unknown scope creates nothing, and `settle keys roll` hands out a new key
 * with the same org, environment and scopes while the old one works until its expiry, then 401.
 */
import t from 'tap';
import { runSettle } from './helpers/cli.ts';
import { startTestApi } from './helpers/api.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t);

const settle = (args: string[]) => runSettle(api.databaseUrl, args);

const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };
const customer = (await api.request('POST', '/customers', { json: { name: 'Scoped Ann' } })).body;

t.test('a key scoped to transactions:write,customers:read does only that', async (t) => {
  const made = await settle(['keys', 'create', '--org', 'acme', '--env', 'test', '--scope', 'transactions:write,customers:read']);
  t.equal(made.code, 0, made.stderr);
  const key = made.stdout.trim();
  t.match(key, /^test_secret_key_[0-9A-Za-z]{32}$/, 'it looks like any secret key');
  const paid = await api.request('POST', '/transactions', { key, json: { type: 'payment', amount: 5, customer_id: customer.id, payment_method: CARD } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  t.equal((await api.request('GET', `/transactions/${paid.body.id}`, { key })).status, 200, 'write implies read');
  t.equal((await api.request('GET', '/customers', { key })).status, 200);
  const change = await api.request('PUT', `/customers/${customer.id}`, { key, json: { name: 'Changed' } });
  t.equal(change.status, 403);
  t.same([change.body.error_type, change.body.details], ['Forbidden', { scope: 'customers:write' }]);
  t.match(change.body.error_description, /lacks the scope customers:write/);
  t.equal((await api.request('GET', `/customers/${customer.id}`)).body.name, 'Scoped Ann', 'nothing changed');
  for (const [method, route, scope] of [['GET', '/invoices', 'invoices:read'], ['POST', '/webhooks', 'webhooks:write'], ['GET', '/webhooks', 'webhooks:read'], ['POST', '/access_tokens', 'access_tokens:write']]) {
    const res = await api.request(method, route, { key, json: method === 'POST' ? {} : undefined });
    t.equal(res.status, 403, `${method} ${route}`);
    t.same(res.body.details, { scope }, `names ${scope}`);
  }
  const listed = await settle(['keys', 'list']);
  t.match(listed.stdout, /transactions:write,customers:read/, 'keys list shows the scopes');
});

t.test('*:read reads everything and changes nothing', async (t) => {
  const key = (await settle(['keys', 'create', '--org', 'acme', '--env', 'test', '--scope', '*:read'])).stdout.trim();
  for (const route of ['/customers', '/transactions', '/webhooks', '/invoices', '/customers?fields=count']) t.equal((await api.request('GET', route, { key })).status, 200, route);
  const res = await api.request('POST', '/customers', { key, json: { name: 'No' } });
  t.equal(res.status, 403);
  t.same(res.body.details, { scope: 'customers:write' });
});

t.test('an unknown scope is a CLI error and creates no key', async (t) => {
  const before = (await api.db.raw('select count(*)::int as n from api_keys')).rows[0].n;
  for (const scope of ['transactons:read', 'customers:admin', '*:write', 'customers']) {
    const res = await settle(['keys', 'create', '--org', 'acme', '--env', 'test', '--scope', scope]);
    t.equal(res.code, 2, `${scope}: ${res.stderr}`);
    t.match(res.stderr, /keys create: /);
  }
  t.equal((await api.db.raw('select count(*)::int as n from api_keys')).rows[0].n, before);
});

t.test('settle keys roll: a new key with the same scopes; the old one works until its expiry, then 401', async (t) => {
  const old = (await settle(['keys', 'create', '--org', 'acme', '--env', 'test', '--scope', 'customers:read'])).stdout.trim();
  const prefix = old.slice(0, old.length - 24);
  const rolled = await settle(['keys', 'roll', prefix, '--expire-in', '3s']);
  t.equal(rolled.code, 0, rolled.stderr);
  const fresh = rolled.stdout.trim();
  t.not(fresh, old);
  t.equal((await api.request('GET', '/customers', { key: fresh })).status, 200);
  t.equal((await api.request('POST', '/customers', { key: fresh, json: { name: 'No' } })).status, 403, 'the same scopes');
  t.equal((await api.request('GET', '/customers', { key: old })).status, 200, 'the old key works meanwhile');
  const expired = await eventually(() => api.request('GET', '/customers', { key: old }), (r) => r.status === 401, 10_000, 250);
  t.equal(expired.status, 401, 'then it is refused');
  t.equal((await api.request('GET', '/customers', { key: fresh })).status, 200, 'the new one goes on');
  const now = await settle(['keys', 'roll', fresh.slice(0, fresh.length - 24), '--expire-in', '0s']);
  t.equal(now.code, 0, now.stderr);
  t.equal((await api.request('GET', '/customers', { key: fresh })).status, 401, '0s: the old key stops at once');
  const bad = await settle(['keys', 'roll', 'test_secret_key_nope']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /no active key matches/);
});

t.test('a key that may read customers lists /accounts as its customers only', async (t) => {
  const key = (await settle(['keys', 'create', '--org', 'acme', '--env', 'test', '--scope', 'customers:read'])).stdout.trim();
  const shop = (await api.request('POST', '/processing_accounts', { json: { name: 'Hidden shop' } })).body;
  const everything = (await api.request('GET', '/accounts?limit=1000')).body.values as Array<{ id: string; type?: string }>;
  t.ok(everything.some((a) => a.id === shop.id), 'an unrestricted key lists the processing account too');
  const listed = await api.request('GET', '/accounts?limit=1000', { key });
  t.equal(listed.status, 200, JSON.stringify(listed.body));
  const ids = (listed.body.values as Array<{ id: string }>).map((a) => a.id);
  t.ok(ids.includes(customer.id), 'its customers');
  t.notOk(ids.includes(shop.id), 'no processing account');
  t.equal(ids.length, everything.length - everything.filter((a) => a.type === 'processing' || a.id === shop.id).length, 'every customer, nothing else');
  t.equal((await api.request('GET', `/accounts/${customer.id}`, { key })).status, 200);
  t.equal((await api.request('GET', `/accounts/${shop.id}`, { key })).status, 404, 'a processing account is not there for it');
  const other = (await settle(['keys', 'create', '--org', 'acme', '--env', 'test', '--scope', 'invoices:read'])).stdout.trim();
  const refused = await api.request('GET', '/accounts', { key: other });
  t.same([refused.status, refused.body.details], [403, { scope: 'accounts:read' }], 'a key that may read no kind of account is refused');
});

t.test('e-mailing an invoice may make its payment link: a key needs payment_links:write beside invoices:write', async (t) => {
  const payer = (await api.request('POST', '/customers', { json: { name: 'Scoped Bo', email: 'bo@example.com' } })).body;
  const invoice = (await api.request('POST', '/invoices', { json: { customer_id: payer.id, due_date: '2026-12-15', items: [{ entry_type: 'charge', amount: 9 }] } })).body;
  const invoicesOnly = (await settle(['keys', 'create', '--org', 'acme', '--env', 'test', '--scope', 'invoices:write'])).stdout.trim();
  const refused = await api.request('POST', `/invoices/${invoice.id}/resend_email`, { key: invoicesOnly });
  t.equal(refused.status, 403);
  t.same([refused.body.error_type, refused.body.details], ['Forbidden', { scope: 'payment_links:write' }]);
  const both = (await settle(['keys', 'create', '--org', 'acme', '--env', 'test', '--scope', 'invoices:write,payment_links:write'])).stdout.trim();
  const sent = await api.request('POST', `/invoices/${invoice.id}/resend_email`, { key: both });
  t.equal(sent.status, 200, JSON.stringify(sent.body));
  t.equal((await api.request('POST', `/invoices/${invoice.id}/resend_email`, { key: (await settle(['keys', 'create', '--org', 'acme', '--env', 'test', '--scope', 'payment_links:write'])).stdout.trim() })).status, 403, 'nor payment_links:write alone');
});
