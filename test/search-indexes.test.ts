/**
 * The console's search (api/console/public/search.js) on indexes: the queries it sends for a term,
 * compiled as the list API compiles them, are answered by index scans on every arm of their OR
 * (trigram indexes for the substring matches, btree for ids, amounts, customers and methods) —
 * never by reading every row of the tenant. The planner is told to avoid a sequential scan, so a
 * plan that still has one means some arm has no index whose expression matches the compiler's.
 */
import t from 'tap';
import { SqlCompiler } from '../api/query/toSql.ts';
import { parseQ } from '../api/query/q.ts';
import { collectionByPath } from '../api/families/index.ts';
import { startTestApi } from './helpers/api.ts';
import type { QueryEvent } from '../api/db/connection.ts';
import { defaultPayingMethod } from '../api/families/transactions/repository.ts';
import { fundingMethod } from '../api/families/funding/repository.ts';
import { lockOtherDefaults } from '../api/families/payment_methods/repository.ts';

const search = await import(new URL('../api/console/public/search.js', import.meta.url).href) as {
  textPattern: (term: string) => string;
  customerQuery: (term: string) => string;
  transactionQuery: (term: string, customerIds?: string[], methodIds?: string[]) => string;
};

const api = await startTestApi(t);

async function made(path: string, json: unknown): Promise<any> {
  const res = await api.request('POST', path, { json });
  if (res.status !== 200) throw new Error(`${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}

const ann = await made('/customers', { name: 'Ann Okafor', email: 'ann.okafor@example.com' });
const method = await made('/payment_methods', { type: 'card', customer_id: ann.id, card: { card_number: '4242424242424242', expiry: '12/35', card_code: '123' } });
await made('/transactions', { type: 'payment', amount: 12.5, customer_id: ann.id, order_number: 'ORD-1001', description: 'Spare parts', payment_method_id: method.id });

/** The plan of `q` on a collection's table, as the list API compiles it, with sequential scans priced out. */
async function planOf(collection: string, q: string): Promise<string> {
  const { family } = collectionByPath.get(collection)!;
  const where = new SqlCompiler(family, 'v1').where(parseQ(q));
  return api.db.transaction(async (tx) => {
    await tx.raw('set local enable_seqscan = off');
    await tx.raw(`analyze ${family.table}`);
    const plan = await tx.raw(`explain select id from ${family.table} where ${where.sql}`, where.bindings);
    return plan.rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
  });
}

t.test('a customer search reads the e-mail and name trigram indexes', async (t) => {
  const plan = await planOf('customers', search.customerQuery('okafor'));
  t.notMatch(plan, /Seq Scan/, plan);
  for (const index of ['accounts_search_email', 'accounts_search_name']) t.match(plan, index);
});

t.test('a transaction search by text, last four, amount and customer reads an index for each', async (t) => {
  const plan = await planOf('transactions', search.transactionQuery('4242', [ann.id], [method.id]));
  t.notMatch(plan, /Seq Scan/, plan);
  for (const index of ['transactions_by_tenant_amount', 'transactions_by_tenant_customer', 'transactions_by_tenant_method']) t.match(plan, index);
  // The four text fields share one multicolumn trigram index: one bitmap scan of it for each.
  const textScans = plan.split('\n').filter((line) => /Bitmap Index Scan on transactions_search_text\b/.test(line)).length;
  t.equal(textScans, 4, plan);
  for (const path of ['{order_number}', '{description}', '{payment_method,card,card_number}', '{payment_method,bank_account,account_number}']) {
    t.match(plan, new RegExp(`Index Cond: \\(\\(data #>> '${path.replace(/[{}]/g, '\\$&')}'::text\\[\\]\\) ~~\\*`), path);
  }
});

t.test('a customer\'s payment methods, found for the transactions they paid, are read by their account', async (t) => {
  const plan = await planOf('payment_methods', `customer_id == "${ann.id}"`);
  t.notMatch(plan, /Seq Scan/, plan);
  t.match(plan, 'payment_methods_search_account');
});

t.test('the writers\' questions about an account\'s methods read the index the search reads', async (t) => {
  const [{ org_id: orgId }] = await api.db.raw('select org_id from payment_methods where id = ?', [method.id]).then((r) => r.rows);
  const tenant = { orgId, environment: 'test' as const };
  // Each question as its writer sends it, captured and rolled back.
  const sent: QueryEvent[] = [];
  const capture = (query: QueryEvent) => sent.push(query);
  api.db.on('query', capture);
  await api.db.transaction(async (tx) => {
    await defaultPayingMethod(tx, tenant, ann.id);
    await fundingMethod(tx, tenant, ann.id);
    await lockOtherDefaults(tx, tenant, ann.id, 'paying', method.id);
    throw new Error('rolled back');
  }).catch((error: Error) => t.equal(error.message, 'rolled back'));
  api.db.off('query', capture);
  const questions = sent.filter((query) => /payment_methods/.test(query.sql));
  t.equal(questions.length, 3, questions.map((q) => q.sql).join('\n'));
  for (const { sql, bindings } of questions) {
    let plan = '';
    await api.db.transaction(async (tx) => {
      await tx.raw('set local enable_seqscan = off');
      // Read in creation order, a tenant this small needs no index of accounts: that way is set
      // aside here (rolled back with the transaction), so the plan shows what finds the account's methods.
      await tx.raw('drop index payment_methods_by_tenant_created');
      await tx.raw('analyze payment_methods');
      const found = await tx.raw(`explain ${sql.replace(/\$\d+/g, '?')}`, bindings);
      plan = found.rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
      throw new Error('rolled back');
    }).catch((error: Error) => t.equal(error.message, 'rolled back'));
    t.notMatch(plan, /Seq Scan/, plan);
    // The account is a condition of the index scan, not a filter over the tenant's methods.
    t.match(plan, /payment_methods_search_account[^\n]*\n\s*Index Cond: [^\n]*account_id/, plan);
  }
});

t.test('the search finds what the indexes hold', async (t) => {
  for (const term of ['okafor', 'ORD-10', 'parts', '4242', '12.50']) {
    const q = search.transactionQuery(term, term === 'okafor' ? [ann.id] : [], []);
    const found = await api.request('GET', `/transactions?${new URLSearchParams({ q })}`);
    t.equal(found.body.values.length, 1, `${term}: ${JSON.stringify(found.body).slice(0, 200)}`);
  }
});

t.test('one or two characters match at the start, which the trigrams find; three or more anywhere', async (t) => {
  t.equal(search.textPattern('an'), '"an*"');
  t.equal(search.textPattern('oka'), '"*oka*"');
  const plan = await planOf('customers', search.customerQuery('an'));
  t.notMatch(plan, /Seq Scan/, plan);
  t.match(plan, 'accounts_search_name');
  const found = async (term: string) => (await api.request('GET', `/customers?${new URLSearchParams({ q: search.customerQuery(term) })}`)).body.values.map((c: { id: string }) => c.id);
  t.same(await found('an'), [ann.id], 'a name that starts with it');
  t.same(await found('ok'), [], 'not two letters inside a name');
  t.same(await found('oka'), [ann.id], 'three letters inside a name');
});
