/**
 * Funding across a crash (CONTRACT §14; issue 12 item 8): the worker runs as its own OS process
 * (`node workers/main.ts`) and is killed with SIGKILL in the middle of the daily funding run over
 * many processing accounts; a new worker takes the job over (after WORKER_DEAD_AFTER) and
 * finishes it. Each account's run is one database transaction that claims its due rows, so the
 * crash may cost a retry but neither loses nor duplicates a deposit.
 *
 * The due money is seeded by SQL in the rows' API shape (cloned from an account, a funding method
 * and payments made through the API): processed payments with funding_timing `rapid`, whose
 * funding date the ledger trigger sets to today, so the run is today's.
 * CRASH_ACCOUNTS / CRASH_PAYMENTS change the size (default 200 accounts × 30 payments; an itemized one gets a sixth of that).
 */
import t from 'tap';
import { rows, type Db } from '../api/db/connection.ts';
import { insertObjects } from '../api/db/objects.ts';
import type { StoredObject, Tenant } from '../api/engine/family.ts';
import { newId } from '../api/ids.ts';
import { startTestApi } from './helpers/api.ts';
import { spawnWorker } from './helpers/processes.ts';
import { eventually } from './helpers/wait.ts';

const ACCOUNTS = Number(process.env.CRASH_ACCOUNTS ?? 200);
const PAYMENTS = Number(process.env.CRASH_PAYMENTS ?? 30);
/** an itemized account makes a deposit per payment: fewer of them keep the run short */
const ITEMIZED_PAYMENTS = Math.max(1, Math.floor(PAYMENTS / 6));
function until(condition: () => Promise<boolean>, ms: number, every = 50): Promise<boolean> {
  return eventually(condition, Boolean, ms, every);
}

async function count(db: Db, sql: string, bindings: unknown[] = []): Promise<number> {
  const [row] = await rows<{ n: string | number }>(db, sql, bindings);
  return Number(row.n);
}

const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };
const BANK = { type: 'bank_account', bank_account: { account_number: '123456789', routing_number: '036001808', account_type: 'checking' } };
type Style = 'netted' | 'gross' | 'itemized';
const styleOf = (i: number): Style => (i % 10 === 9 ? 'itemized' : i % 5 === 3 ? 'gross' : 'netted');
const feeOf = (methodType: string, amount: number) => (methodType === 'bank_account' ? Math.min(Math.round(amount * 0.01), 500) : Math.round(amount * 0.029) + 30);

t.test(`kill -9 of the worker in the middle of a funding run over ${ACCOUNTS} accounts loses and duplicates nothing`, { timeout: 150_000 }, async (t) => {
  const started = Date.now();
  const api = await startTestApi(t);
  const key = await api.newKey('crash', 'test');
  const post = (p: string, json: unknown) => api.request('POST', p, { key, json });

  // Shapes from the API: a processing account with its funding method, and a card and a bank payment.
  // Its delay of 2 business days keeps these two payments out of today's run (they must stay pending).
  const shop = await post('/processing_accounts', { name: 'Template shop', funding_style: 'net', funding_delay: 2, payment_methods: [BANK] });
  t.equal(shop.status, 200, shop.status === 200 ? 'template account made' : JSON.stringify(shop.body).slice(0, 300));
  const customer = await post('/customers', { name: 'Payer', email: 'payer@example.com' });
  const cardPayment = await post('/transactions', { type: 'payment', amount: 10, customer_id: customer.body.id, processing_id: shop.body.id, payment_method: CARD });
  const bankPayment = await post('/transactions', { type: 'payment', amount: 10, customer_id: customer.body.id, processing_id: shop.body.id, payment_method: BANK });
  t.same([cardPayment.status, bankPayment.status], [200, 200], 'template payments made');
  const [accountRow] = await rows<StoredObject & { org_id: string }>(api.db, 'select id, type, data, org_id from accounts where id = ?', [shop.body.id]);
  const [methodRow] = await rows<StoredObject>(api.db, "select id, type, data from payment_methods where data->>'account_id' = ? and type = 'bank_account'", [shop.body.id]);
  t.match((methodRow?.data.account_defaults as Record<string, unknown> | undefined)?.funding, /^(deposits|all)$/, 'the template account has a funding method');
  const templates = await rows<StoredObject>(api.db, 'select id, type, data from transactions where id = any(?::text[]) order by id', [[cardPayment.body.id, bankPayment.body.id]]);
  const tenant: Tenant = { orgId: accountRow.org_id, environment: 'test' };

  // Seed: ACCOUNTS processing accounts (netted, gross, itemized), each with a funding method and PAYMENTS due payments.
  const accounts: Array<{ id: string; style: Style; expected: { gross: number; fees: number; items: number[] } }> = [];
  const accountRows: StoredObject[] = [];
  const methodRows: StoredObject[] = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const id = newId('acct');
    const style = styleOf(i);
    const processing = accountRow.data.processing as Record<string, unknown>;
    accountRows.push({ ...accountRow, id, data: { ...accountRow.data, name: `Shop ${i}`, processing: { ...processing, funding: { ...(processing.funding as object), style, delay: 2 } } } });
    methodRows.push({ ...methodRow, id: newId('pm'), data: { ...methodRow.data, account_id: id } });
    accounts.push({ id, style, expected: { gross: 0, fees: 0, items: [] } });
  }
  await insertObjects(api.db, 'accounts', tenant, accountRows);
  await insertObjects(api.db, 'payment_methods', tenant, methodRows);
  const seedStarted = Date.now();
  for (let a = 0; a < accounts.length; a += 20) {
    const batch: StoredObject[] = [];
    for (const account of accounts.slice(a, a + 20)) {
      for (let k = 0; k < (account.style === 'itemized' ? ITEMIZED_PAYMENTS : PAYMENTS); k++) {
        const template = templates[k % 2];
        const amount = 100 + Math.floor(Math.random() * 100_000);
        const data: Record<string, unknown> = {
          ...template.data, amount, processing_id: account.id, receiver: { account_id: account.id, method_id: null }, funding_timing: 'rapid', status: 'processed',
        };
        delete data.fee;
        delete data.funding_status;
        delete data.funding_date;
        const fee = feeOf(String(template.data.payment_method_type), amount);
        account.expected.gross += amount;
        account.expected.fees += fee;
        account.expected.items.push(amount - fee);
        batch.push({ id: newId('txn'), type: 'payment', data, created_at: new Date(), modified_at: new Date() });
      }
    }
    await api.db.transaction((tx) => insertObjects(tx, 'transactions', tenant, batch));
  }
  const today = new Date().toISOString().slice(0, 10);
  const due = await count(api.db, "select count(*) as n from transactions where data->>'funding_status' = 'pending' and data->>'funding_date' <= ?", [today]);
  const seededPayments = accounts.reduce((n, a) => n + a.expected.items.length, 0);
  t.equal(due, seededPayments, `${due} payments due today, seeded in ${((Date.now() - seedStarted) / 1000).toFixed(1)} s`);
  // One deposit per netted or gross account, one per payment of an itemized account (every net is positive).
  const expectedDeposits = accounts.reduce((n, a) => n + (a.style === 'itemized' ? a.expected.items.length : 1), 0);

  const env = { DATABASE_URL: api.databaseUrl, WORKER_DEAD_AFTER: '2s', WORKER_POLL_INTERVAL: '100', LOG_LEVEL: 'warn', WORKER_CONCURRENCY: '4' };
  const first = spawnWorker(t, env);
  t.ok(await until(async () => (await count(api.db, 'select count(*) as n from worker_heartbeats')) > 0, 30_000), 'the first worker is up');

  const fundedAccounts = () => count(api.db, "select count(distinct data->>'processing_id') as n from transactions where type in ('deposit', 'withdraw')");
  await rows(api.db, "select graphile_worker.add_job('funding_day', '{}'::json)");
  const killAt = Math.max(1, Math.floor(ACCOUNTS / 5));
  t.ok(await until(async () => (await fundedAccounts()) >= killAt, 60_000, 10), `the run began (${await fundedAccounts()} accounts funded)`);
  const [job] = await rows<{ locked_by: string | null; attempts: number }>(api.db, "select locked_by, attempts from graphile_worker.jobs where task_identifier = 'funding_day'");
  // (for the record) worker connections inside a transaction that has written: an account's run cut off half-way
  const writing = await count(api.db, 'select count(*) as n from pg_stat_activity where datname = current_database() and backend_xid is not null and pid <> pg_backend_pid()');
  first.child.kill('SIGKILL');
  await first.exited;
  const atKill = await fundedAccounts();
  t.comment(`killed after ${((Date.now() - started) / 1000).toFixed(1)} s with ${atKill} of ${ACCOUNTS} accounts funded, ${writing} transaction(s) in flight`);
  t.ok(atKill > 0 && atKill < ACCOUNTS, `killed mid-run: ${atKill} of ${ACCOUNTS} accounts funded`);
  t.ok(job?.locked_by, 'the funding_day job was held by the killed worker');

  const second = spawnWorker(t, env);
  const finished = await until(async () => (await count(api.db,
    `select (select count(*) from transactions where data->>'funding_status' = 'pending' and data->>'funding_date' <= ?)
          + (select count(*) from graphile_worker.jobs where task_identifier = 'funding_day') as n`, [today])) === 0, 90_000, 200);
  t.ok(finished, `the new worker finished the run\n${finished ? '' : second.output()}`);
  t.equal(second.child.exitCode, null, 'the new worker is still running');
  t.comment(`finished after ${((Date.now() - started) / 1000).toFixed(1)} s`);

  // Nothing lost: every seeded payment is funded, with one clear and one fund operation, and the template's two (not yet due) are not.
  const seeded = accounts.map((a) => a.id);
  t.equal(await count(api.db, "select count(*) as n from transactions where data->>'processing_id' = any(?::text[]) and type = 'payment' and data->>'funding_status' = 'funded'", [seeded]),
    seededPayments, 'every seeded payment is funded');
  t.same((await rows<{ s: string }>(api.db, "select data->>'funding_status' as s from transactions where data->>'processing_id' = ? and type = 'payment'", [shop.body.id])).map((r) => r.s),
    ['pending', 'pending'], 'payments not yet due stay pending');
  const ops = await rows<{ type: string; n: number; per: number }>(api.db,
    `select type, count(*)::int as n, max(k)::int as per from (
       select type, data->>'transaction_id' as id, count(*) as k from transaction_operations where type in ('clear', 'fund') group by 1, 2) o group by type order by type`);
  t.same(ops, [{ type: 'clear', n: seededPayments, per: 1 }, { type: 'fund', n: seededPayments, per: 1 }], 'one clear and one fund operation per payment');

  // Nothing duplicated: each payment is listed by exactly one deposit, of its own account.
  t.same(await rows(api.db,
    `select assoc_transaction_id, count(*)::int as n from transfers where entry_type in ('deposit', 'withdraw')
      group by assoc_transaction_id having count(*) > 1 limit 5`), [], 'no transaction is listed by two deposits');
  t.equal(await count(api.db,
    `select count(*) as n from transactions p
      where p.data->>'processing_id' = any(?::text[]) and p.type = 'payment'
        and (select count(*) from transfers f join transactions d on d.id = f.transaction_id
              where f.assoc_transaction_id = p.id and f.entry_type = 'deposit' and d.data->>'processing_id' = p.data->>'processing_id') <> 1`, [seeded]),
  0, 'every payment is listed by exactly one deposit of its account');
  const deposits = await rows<{ account_id: string; type: string; amount: string }>(api.db,
    "select data->>'processing_id' as account_id, type, data->>'amount' as amount from transactions where type in ('deposit', 'withdraw') order by 1, (data->>'amount')::bigint");
  t.equal(deposits.length, expectedDeposits, `${expectedDeposits} deposits: one per netted or gross account, one per itemized payment`);
  t.equal(await count(api.db, "select count(*) as n from events where trigger = 'deposit'"), expectedDeposits, 'one deposit event per deposit');
  const byAccount = new Map<string, number[]>();
  for (const d of deposits) byAccount.set(d.account_id, [...(byAccount.get(d.account_id) ?? []), (d.type === 'deposit' ? 1 : -1) * Number(d.amount)]);
  const wrong: string[] = [];
  for (const a of accounts) {
    const got = byAccount.get(a.id) ?? [];
    const want = a.style === 'itemized' ? [...a.expected.items].sort((x, y) => x - y) : [a.style === 'gross' ? a.expected.gross : a.expected.gross - a.expected.fees];
    if (JSON.stringify(got) !== JSON.stringify(want)) wrong.push(`${a.id} (${a.style}): deposits ${JSON.stringify(got).slice(0, 120)}, expected ${JSON.stringify(want).slice(0, 120)}`);
  }
  t.same(wrong.slice(0, 5), [], `each account's deposits are its due money, once (${wrong.length} wrong)`);

  // The identity per account, from the transactions table and the API's balances; the ledger balances.
  const left = new Map((await rows<{ account_id: string; total: string }>(api.db,
    `select data->>'processing_id' as account_id,
            sum(case when type in ('payment', 'chargeback_reversal') then 1 else -1 end * (data->>'amount')::bigint
                - case when type = 'payment' then case when data->>'payment_method_type' = 'bank_account' then least(round((data->>'amount')::bigint * 0.01), 500)
                                                    else round((data->>'amount')::bigint * 0.029) + 30 end else 0 end)::bigint as total
       from transactions where type in ('payment', 'refund', 'payout', 'chargeback', 'chargeback_reversal') and data->>'status' = 'processed'
      group by 1`)).map((r) => [r.account_id, Number(r.total)]));
  const identity: string[] = [];
  const balances: string[] = [];
  let listed = 0;
  for (let offset = 0; ; offset += 100) {
    const page = await api.request('GET', `/processing_accounts?fields=*,balance&limit=100&offset=${offset}`, { key });
    t.equal(page.status, 200, `balances page at ${offset}`);
    const values = page.body.values as Array<{ id: string; balance: Record<string, number> }>;
    for (const account of values) {
      const b = account.balance;
      const right = Math.round(b.pending * 100) + Math.round(b.available * 100) + Math.round(b.held * 100) + Math.round(b.funded * 100) - Math.round(b.withdrawn * 100);
      if (right !== (left.get(account.id) ?? 0)) identity.push(`${account.id}: transactions say ${(left.get(account.id) ?? 0) / 100}, balance ${JSON.stringify(b)}`);
      const mine = accounts.find((a) => a.id === account.id);
      if (mine) {
        const funded = mine.style === 'gross' ? mine.expected.gross : mine.expected.gross - mine.expected.fees;
        const available = mine.style === 'gross' ? -mine.expected.fees : 0;
        const want = { pending: 0, available: available / 100, held: 0, funded: funded / 100, withdrawn: 0 };
        if (JSON.stringify(b) !== JSON.stringify(want)) balances.push(`${account.id} (${mine.style}): ${JSON.stringify(b)}, expected ${JSON.stringify(want)}`);
      }
    }
    listed += values.length;
    if (values.length < 100) break;
  }
  t.ok(listed >= ACCOUNTS, `${listed} processing accounts listed`);
  t.same(identity.slice(0, 5), [], `the identity holds for every account (${identity.length} do not)`);
  t.same(balances.slice(0, 5), [], `every seeded account's balance is all funded (${balances.length} are not)`);
  t.same(await rows(api.db, 'select posting, sum(amount)::bigint as total from ledger_entries group by posting having sum(amount) <> 0 limit 5'), [], 'every ledger posting sums to zero');
  t.comment(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
});
