/**
 * `settle reporting rebuild` with several tenants: every tenant's answers equal Postgres's after
 * the swap, and changes made after it (a void, an attribute, a deletion) win over the rebuilt rows.
 */
import tap from 'tap';

const t = tap;
import { loadConfig } from '../api/config.ts';
import { rows } from '../api/db/connection.ts';
import { rebuildThroughProcess } from '../reporting/rebuild.ts';
import { startTestApi, TEST_REPORTING_SECRET } from './helpers/api.ts';
import { reservePort, startTestReporting, tempDataDir } from './reporting-support.ts';

const port = await reservePort();
const env = { REPORTING_URL: `http://127.0.0.1:${port}`, REPORTING_PORT: String(port), REPORTING_WAIT: '2000', SETTLE_PROCESSING_DELAY: '50' };
const api = await startTestApi(t, env);
await startTestReporting(t, api.databaseUrl, tempDataDir(t), env);

const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };

interface Tenant {
  org: string;
  environment: 'test' | 'live';
  key: string;
  pay: (amount: number) => Promise<{ id: string }>;
}

/** A merchant with a processing account and a customer, paying by card. */
async function tenant(org: string, environment: 'test' | 'live'): Promise<Tenant> {
  const key = await api.newKey(org, environment);
  await api.request('POST', '/processing_accounts', { key, json: { name: `${org} shop` } });
  const customer = (await api.request('POST', '/customers', { key, json: { name: 'Payer', email: 'payer@example.com' } })).body;
  const pay = async (amount: number) => {
    const res = await api.request('POST', '/transactions', { key, json: { type: 'payment', amount, customer_id: customer.id, payment_method: CARD } });
    if (res.status !== 200) throw new Error(`payment failed: ${JSON.stringify(res.body)}`);
    return res.body;
  };
  return { org, environment, key, pay };
}

/** What Postgres holds for a tenant, grouped by status: the truth the mirror must show. */
async function truth(who: Tenant): Promise<unknown> {
  const found = await rows<{ status: string; count: number; total: string }>(api.db,
    `select t.data->>'status' as status, count(*)::bigint as count, sum((t.data->>'amount')::bigint)::text as total
       from transactions t join orgs o on o.id = t.org_id
      where o.name = ? and t.environment = ? group by 1 order by 1`, [who.org, who.environment]);
  return found.map((r) => ({ status: r.status, count: Number(r.count), 'sum(amount)': Number(r.total) / 100 }));
}

async function byStatus(who: Tenant): Promise<unknown> {
  const res = await api.request('GET', `/transactions?${new URLSearchParams({ fields: 'status,count,sum(amount)', group_by: 'status', order_by: 'status' })}`, { key: who.key });
  if (res.status !== 200) throw new Error(`aggregate failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.values;
}

async function rebuild(): Promise<number | undefined> {
  return (await rebuildThroughProcess(loadConfig({ REPORTING_URL: env.REPORTING_URL, REPORTING_SECRET: TEST_REPORTING_SECRET }), () => {}))?.done;
}

const tenants = [await tenant('acme', 'test'), await tenant('acme', 'live'), await tenant('globex', 'test'), await tenant('initech', 'test')];
const paid = new Map<Tenant, Array<{ id: string }>>();
for (const [i, who] of tenants.entries()) {
  const payments = [];
  for (let n = 1; n <= 3 + i; n += 1) payments.push(await who.pay(n * 1.25 + i));
  paid.set(who, payments);
}

t.test('a rebuild copies every tenant: each answers as Postgres does after the swap', async (t) => {
  const [{ n }] = await rows<{ n: number }>(api.db, 'select count(*)::int as n from transactions');
  t.equal(await rebuild(), n, 'every stored transaction copied');
  for (const who of tenants) t.same(await byStatus(who), await truth(who), `${who.org} ${who.environment}`);
});

t.test('changes after a rebuild win over the rebuilt rows', async (t) => {
  t.ok(await rebuild(), 'rebuilt');
  const [acme, , globex, initech] = tenants;
  const voided = await api.request('PUT', `/transactions/${paid.get(acme)![0].id}`, { key: acme.key, json: { status: 'voided' } });
  t.equal(voided.status, 200, 'the void is taken');
  t.same(await byStatus(acme), await truth(acme), 'a void of a rebuilt payment');
  const tagged = await api.request('PUT', `/transactions/${paid.get(globex)![1].id}`, { key: globex.key, json: { attrs: { region: 'eu-west' } } });
  t.equal(tagged.status, 200, 'the attribute is taken');
  const found = await api.request('GET', `/transactions?${new URLSearchParams({ fields: 'count', q: 'attrs.region == "eu-west"' })}`, { key: globex.key });
  t.same(found.body.values, [{ count: 1 }], 'an attribute set on a rebuilt payment');
  await rows(api.db, 'delete from transactions where id = ?', [paid.get(initech)![2].id]);
  t.same(await byStatus(initech), await truth(initech), 'a deletion of a rebuilt payment');
  for (const who of tenants) t.same(await byStatus(who), await truth(who), `${who.org} ${who.environment} after the changes`);
});
