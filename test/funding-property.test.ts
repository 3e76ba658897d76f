/**
 * Funding under random operations (CONTRACT §14, §15; issue 12 item 8): a seeded random walk of
 * payments (card, bank, v1 and v2, instant, disputed, rejected), captures, payouts, partial and
 * full refunds, voids, manual deposits, concurrent bursts (same-payment refunds, two direct
 * `fundAccount` runs of one account and date, racing deposits, a clock move among requests) and
 * test clock moves, against the real API and a real worker. After every step, for every
 * processing account:
 *   (a) Σ processed payments − refunds − payouts − chargebacks + reversals − fees, computed from
 *       the transactions table (fees re-derived from the sandbox pricing), equals
 *       pending + available + held + funded − withdrawn of the API's `balance`;
 *   (b) every ledger posting sums to zero;
 *   (c) no transaction is listed by two deposits/withdrawals;
 *   (d) every funded transaction has one `fund` operation and is listed by exactly the deposit
 *       that operation names; only when no deposit was made (run.ts: an itemized or instant item
 *       whose net is zero, or a netted/gross run whose total is zero) is it listed by none.
 * At the end the clock passes every funding date: every processed paying transaction of an
 * automatic-style account with a funding method is funded, exactly once.
 *
 * FUNDING_SEED=<n> replays a walk's choices (the worker's timing may still make a replay differ);
 * FUNDING_STEPS=<n> changes its length (default 150); FUNDING_VERBOSE=1 lists the zero-total runs.
 * The last test holds manual releases to their contract.
 */
import { randomInt } from 'node:crypto';
import t, { type Test } from 'tap';
import { rows } from '../api/db/connection.ts';
import { loadConfig } from '../api/config.ts';
import { createDomainServices } from '../api/domain.ts';
import { fundAccount } from '../api/families/funding/run.ts';
import { startTestApi, startTestWorker, type ApiResponse } from './helpers/api.ts';
import { seededRandom } from './helpers/seeded.ts';
import { eventually } from './helpers/wait.ts';

const SEED = process.env.FUNDING_SEED ? Number(process.env.FUNDING_SEED) : randomInt(1, 2 ** 31);
const STEPS = Number(process.env.FUNDING_STEPS ?? 150);
t.comment(`FUNDING_SEED=${SEED} FUNDING_STEPS=${STEPS}`);
console.log(`# funding property test: FUNDING_SEED=${SEED} FUNDING_STEPS=${STEPS}`);

const random = seededRandom(SEED);
// Each operation draws its random numbers before its first await, so that in a burst the order of
// the draws is the order the operations were started in, and a seed replays the same choices
// (as far as the worker's timing leaves the same candidates: a replay may still differ there).
const intOf = (u: number, lo: number, hi: number) => lo + Math.floor(u * (hi - lo + 1));
const pickOf = <T>(u: number, list: T[]): T => list[Math.floor(u * list.length)];
const int = (lo: number, hi: number) => intOf(random(), lo, hi);
const pick = <T>(list: T[]): T => pickOf(random(), list);
const chance = (p: number) => random() < p;
const draws = (n: number) => Array.from({ length: n }, () => random());

const api = await startTestApi(t);
const domain = createDomainServices(loadConfig({ DATABASE_URL: api.databaseUrl }));
await startTestWorker(t, api.databaseUrl, { WORKER_POLL_INTERVAL: '100' });

const DAY = 86_400_000;
const PAYING = ['payment', 'refund', 'payout', 'chargeback', 'chargeback_reversal'];
const card = (number: string) => ({ type: 'card', card: { card_number: number, expiry: '12/35', card_code: '123' } });
const CARDS = ['4242 4242 4242 4242', '5103 2088 7967 2792'];
const bank = (accountNumber: string) => ({ type: 'bank_account', bank_account: { account_number: accountNumber, routing_number: '036001808', account_type: 'checking' } });
const major = (cents: number) => cents / 100;
const cents = (value: number) => Math.round(value * 100);
const clockText = (at: Date) => at.toISOString().slice(0, 19).replace('T', ' ');

type Style = 'netted' | 'gross' | 'itemized' | 'manual';
interface Org {
  name: string;
  key: string;
  orgId: string;
  customerId: string;
  payoutMethodId: string;
}
interface Account {
  id: string;
  org: Org;
  style: Style;
  delay: number;
  hasMethod: boolean;
}

const orgs: Org[] = [];
const accounts: Account[] = [];
/**
 * The payments, refunds and authorizations this walk made, in the order they were started (an
 * entry is reserved before its request and gets its id when the answer comes; one without an id
 * is still in flight or failed, and is never picked).
 */
interface Made {
  id: string;
  account: Account;
  amount: number;
}
const payments: Made[] = [];
const refunds: Made[] = [];
const authorizations: Made[] = [];
const made = (list: Made[]) => list.filter((m) => m.id !== '');
const log: string[] = [];

function request(org: Org, method: string, path: string, json?: unknown, version: 'v1' | 'v2' = 'v1'): Promise<ApiResponse> {
  return api.request(method, path, { key: org.key, version, json });
}

/** A refusal is a 400 with details; nothing may answer 5xx, 409 or anything else. */
function acceptable(res: ApiResponse): boolean {
  return res.status === 200 || (res.status === 400 && typeof res.body?.details === 'object' && res.body.details !== null);
}
const problems: string[] = [];
function expectAcceptable(what: string, res: ApiResponse): ApiResponse {
  if (!acceptable(res)) problems.push(`${what}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return res;
}

// ---------------------------------------------------------------- setup

for (const name of ['prop-a', 'prop-b']) {
  const key = await api.newKey(name, 'test');
  const org: Org = { name, key, orgId: '', customerId: '', payoutMethodId: '' };
  const customer = await request(org, 'POST', '/customers', { name: 'Payer', email: 'payer@example.com' });
  if (customer.status !== 200) throw new Error(JSON.stringify(customer.body));
  org.customerId = customer.body.id;
  const method = await request(org, 'POST', '/payment_methods', { ...bank('123456789'), customer_id: org.customerId });
  if (method.status !== 200) throw new Error(JSON.stringify(method.body));
  org.payoutMethodId = method.body.id;
  orgs.push(org);
}
{
  // Every style with a funding method, and two more without one (one of them gets a method later, maybe).
  const plan: Array<{ style: Style; hasMethod: boolean }> = [
    { style: 'netted', hasMethod: true }, { style: 'gross', hasMethod: true }, { style: 'itemized', hasMethod: true }, { style: 'manual', hasMethod: true },
    { style: pick(['netted', 'gross', 'itemized'] as Style[]), hasMethod: false }, { style: pick(['netted', 'manual', 'itemized'] as Style[]), hasMethod: false },
  ];
  for (const [i, spec] of plan.entries()) {
    const org = orgs[i % orgs.length];
    const delay = int(0, 3);
    const created = await request(org, 'POST', '/processing_accounts', {
      name: `Shop ${i}`, funding_style: spec.style === 'netted' ? 'net' : spec.style, funding_delay: delay, payment_methods: spec.hasMethod ? [bank('987654321')] : [],
    });
    if (created.status !== 200) throw new Error(JSON.stringify(created.body));
    accounts.push({ id: created.body.id, org, style: spec.style, delay, hasMethod: spec.hasMethod });
  }
  for (const org of orgs) {
    const [row] = await rows<{ org_id: string }>(api.db, 'select org_id from accounts where id = ?', [accounts.find((a) => a.org === org)!.id]);
    org.orgId = row.org_id;
  }
  if (orgs[0].orgId === orgs[1].orgId) throw new Error('the two keys share an org');
}
t.comment(`accounts: ${accounts.map((a) => `${a.id.slice(-6)} ${a.style} delay ${a.delay}${a.hasMethod ? '' : ' no-method'}`).join('; ')}`);

// ---------------------------------------------------------------- the invariants

const orgIds = () => orgs.map((o) => o.orgId);

function fee(type: string, methodType: string | null, amount: number): number {
  if (type !== 'payment') return 0;
  if (methodType === 'bank_account') return Math.min(Math.round(amount * 0.01), 500);
  return Math.round(amount * 0.029) + 30;
}
function gross(type: string, amount: number): number {
  if (type === 'payment' || type === 'chargeback_reversal') return amount;
  if (type === 'refund' || type === 'payout' || type === 'chargeback') return -amount;
  return 0;
}

interface PayingRow {
  id: string;
  type: string;
  status: string;
  amount: string;
  fee: string | null;
  method_type: string | null;
  account_id: string | null;
}

/** The left side per account, from the transactions table alone (fees from the pricing, compared with the stored fee). */
async function leftSides(): Promise<{ sums: Record<string, number>; feeErrors: string[] }> {
  const found = await rows<PayingRow>(api.db,
    `select id, type, data->>'status' as status, data->>'amount' as amount, data->>'fee' as fee,
            data->>'payment_method_type' as method_type, data->>'processing_id' as account_id
       from transactions where org_id = any(?::text[]) and type = any(?::text[])`,
    [orgIds(), PAYING]);
  const sums: Record<string, number> = {};
  const feeErrors: string[] = [];
  for (const row of found) {
    if (row.status !== 'processed' || !row.account_id) continue;
    const amount = Number(row.amount);
    const expectedFee = fee(row.type, row.method_type, amount);
    if (Number(row.fee ?? 0) !== expectedFee) feeErrors.push(`${row.id} ${row.type} ${row.method_type} ${amount}: fee ${row.fee}, pricing says ${expectedFee}`);
    sums[row.account_id] = (sums[row.account_id] ?? 0) + gross(row.type, amount) - expectedFee;
  }
  return { sums, feeErrors };
}

async function rightSides(): Promise<Record<string, { total: number; balance: Record<string, number> }>> {
  const result: Record<string, { total: number; balance: Record<string, number> }> = {};
  for (const org of orgs) {
    const listed = await request(org, 'GET', '/processing_accounts?fields=*,balance&limit=100');
    if (listed.status !== 200) throw new Error(`balances: ${listed.status} ${JSON.stringify(listed.body)}`);
    for (const account of listed.body.values) {
      const b = account.balance;
      result[account.id] = { total: cents(b.pending) + cents(b.available) + cents(b.held) + cents(b.funded) - cents(b.withdrawn), balance: b };
    }
  }
  return result;
}

async function identityProblems(): Promise<string[]> {
  // The left side is read before and after the balances; the worker may commit in between, so
  // compare only a balance read between two equal left sides (a posting that changes the right
  // side's total always comes with a status change that changes the left side, in one commit).
  const read = async () => ({ before: await leftSides(), right: await rightSides(), after: await leftSides() });
  const { right, after } = await eventually(read, (sides) => JSON.stringify(sides.before.sums) === JSON.stringify(sides.after.sums), 5000, 50);
  const out = [...after.feeErrors];
  for (const account of accounts) {
    if (!right[account.id]) out.push(`${account.id}: no balance in the API's list`);
  }
  for (const [id, r] of Object.entries(right)) {
    const left = after.sums[id] ?? 0;
    if (left !== r.total) out.push(`${id}: transactions say ${major(left)}, balance says ${major(r.total)} ${JSON.stringify(r.balance)}`);
  }
  return out;
}

interface FundedRow {
  id: string;
  type: string;
  account_id: string;
  amount: string;
  fee: string | null;
  timing: string | null;
  listed: number;
  listed_by: string[] | null;
  lister_accounts: string[] | null;
  fund_ops: number;
  op_deposits: Array<string | null> | null;
  op_batch: string | null;
}

interface LedgerFacts {
  /** (b) postings whose legs do not sum to zero */
  unbalanced: unknown[];
  /** (c) transactions listed by more than one deposit/withdrawal entry */
  listed_twice: unknown[];
  /** deposit/withdrawal entries naming a transaction that is not funded */
  orphans: unknown[];
  /** payments whose standing refunds sum above the amount */
  over_refunded: unknown[];
  funded: FundedRow[];
}

/** Everything (b), (c) and (d) read, in one statement (one snapshot, one round trip). */
async function ledgerFacts(): Promise<LedgerFacts> {
  const [row] = await rows<{ facts: LedgerFacts }>(api.db,
    `with mine as (select unnest(?::text[]) as org_id),
     listings as (
       select f.assoc_transaction_id as id, count(*)::int as n, array_agg(f.transaction_id) as by, array_agg(d.data->>'processing_id') as accounts
         from transfers f join transactions d on d.id = f.transaction_id
        where f.org_id in (select org_id from mine) and f.entry_type in ('deposit', 'withdraw') and d.type in ('deposit', 'withdraw')
          and f.assoc_transaction_id is not null
        group by f.assoc_transaction_id
     ), ops as (
       select data->>'transaction_id' as id, count(*)::int as n, array_agg(data->>'deposit_id') as deposits, min(xmin::text) as batch
         from transaction_operations where org_id in (select org_id from mine) and type = 'fund' group by data->>'transaction_id'
     ), funded as (
       select t.id, t.type, t.data->>'processing_id' as account_id, t.data->>'amount' as amount, t.data->>'fee' as fee, t.data->>'funding_timing' as timing,
              coalesce(l.n, 0) as listed, l.by as listed_by, l.accounts as lister_accounts,
              coalesce(o.n, 0) as fund_ops, o.deposits as op_deposits, o.batch as op_batch
         from transactions t left join listings l on l.id = t.id left join ops o on o.id = t.id
        where t.org_id in (select org_id from mine) and t.data->>'funding_status' = 'funded'
     )
     select json_build_object(
       'unbalanced', (select coalesce(json_agg(u), '[]') from (
          select posting, sum(amount)::bigint as total from ledger_entries where org_id in (select org_id from mine)
           group by posting having sum(amount) <> 0) u),
       'listed_twice', (select coalesce(json_agg(l), '[]') from (select id, n, by from listings where n > 1) l),
       'orphans', (select coalesce(json_agg(o), '[]') from (
          select l.id as listed, l.by as deposits, t.data->>'funding_status' as funding_status
            from listings l join transactions t on t.id = l.id where t.data->>'funding_status' is distinct from 'funded') o),
       'over_refunded', (select coalesce(json_agg(r), '[]') from (
          select p.id, (p.data->>'amount')::bigint as amount, sum(f.amount)::bigint as refunded
            from transactions p join transfers f on f.assoc_transaction_id = p.id and f.entry_type = 'refund' and f.transaction_id <> p.id
            join transactions r on r.id = f.transaction_id and r.data->>'status' not in ('voided', 'declined', 'rejected')
           where p.org_id in (select org_id from mine) and p.type = 'payment'
           group by p.id having sum(f.amount) > (p.data->>'amount')::bigint) r),
       'funded', (select coalesce(json_agg(f), '[]') from funded f)
     ) as facts`,
    [orgIds()]);
  return row.facts;
}

/** Runs funded without a deposit (zero totals), by kind, each counted once. */
const zeroRuns = { itemized: new Map<string, string>(), netted: new Map<string, string>(), gross: new Map<string, string>() };

/**
 * (d): every funded transaction has exactly one fund operation; when it names a deposit, that
 * deposit (of the transaction's own account) is the one listing it; when it names none, nothing
 * lists it and run.ts's rule explains why: it makes no deposit of zero, so an itemized (or
 * instant) item whose net is zero, a gross run whose items' gross sum is zero, or a netted run
 * whose available balance came to zero funds without a deposit.
 */
function fundingProblems(funded: FundedRow[]): string[] {
  const out: string[] = [];
  const unlisted = new Map<string, FundedRow[]>();
  for (const row of funded) {
    if (row.fund_ops !== 1) out.push(`${row.id} (${row.type}) is funded with ${row.fund_ops} fund operations`);
    if (row.listed > 1) continue; // (c) reports it
    if (row.lister_accounts?.some((a) => a !== row.account_id)) out.push(`${row.id} of ${row.account_id} is listed by a deposit of ${row.lister_accounts}`);
    const named = row.op_deposits?.[0] ?? null;
    if (named) {
      if (row.listed !== 1 || row.listed_by![0] !== named) out.push(`${row.id} (${row.type}) was funded by ${named} but is listed by ${JSON.stringify(row.listed_by)}`);
      continue;
    }
    if (row.listed !== 0) {
      out.push(`${row.id} (${row.type}) names no deposit in its fund operation but is listed by ${JSON.stringify(row.listed_by)}`);
      continue;
    }
    const batch = `${row.account_id}:${row.op_batch}`;
    unlisted.set(batch, [...(unlisted.get(batch) ?? []), row]);
  }
  for (const [batch, items] of unlisted) {
    const account = accounts.find((a) => a.id === items[0].account_id);
    const nets = items.map((i) => gross(i.type, Number(i.amount)) - Number(i.fee ?? 0));
    const what = items.map((i, k) => `${i.id} ${i.type} ${i.amount} net ${nets[k]} timing ${i.timing}`).join('; ');
    if (nets.every((n) => n === 0)) {
      zeroRuns.itemized.set(batch, what);
      continue;
    }
    if (account?.style === 'gross' && items.reduce((s, i) => s + gross(i.type, Number(i.amount)), 0) === 0) {
      zeroRuns.gross.set(batch, what);
      continue;
    }
    if (account?.style === 'netted') {
      zeroRuns.netted.set(batch, what); // the available balance came to zero: not checkable from the rows afterwards
      continue;
    }
    out.push(`funded with no deposit in ${account?.style} run ${batch}: ${what}`);
  }
  return out;
}

let checks = 0;
let checkMs = 0;
async function checkAll(t: Test, label: string): Promise<boolean> {
  checks += 1;
  const began = Date.now();
  const context = `[seed ${SEED}] after ${label}`;
  const identity = await identityProblems();
  const facts = await ledgerFacts();
  const results = [
    t.same(identity, [], `(a) identity per account ${context}`),
    t.same(facts.unbalanced, [], `(b) postings balance ${context}`),
    t.same(facts.listed_twice, [], `(c) nothing listed twice ${context}`),
    t.same([...fundingProblems(facts.funded), ...facts.orphans.map((o) => `listed but not funded: ${JSON.stringify(o)}`)], [], `(d) funded = listed once ${context}`),
    t.same(facts.over_refunded, [], `refunds within the payment ${context}`),
    t.same(problems.splice(0), [], `answers are 200 or 400 with details ${context}`),
  ];
  checkMs += Date.now() - began;
  return results.every(Boolean);
}

// ---------------------------------------------------------------- the operations

function randomAmount(): number {
  const r = random();
  if (r < 0.04) return 31; // a card payment of 0.31 nets exactly zero (fee 0.31)
  if (r < 0.25) return int(1, 500);
  return int(100, 100_000);
}

async function clockOf(org: Org): Promise<Date> {
  const res = await request(org, 'GET', '/test_clock');
  return new Date(res.body.now.replace(' ', 'T') + 'Z');
}

async function pay(account: Account, kind: 'card' | 'bank' | 'v2' | 'disputed'): Promise<string> {
  const org = account.org;
  const amount = randomAmount();
  const entry: Made = { id: '', account, amount };
  payments.push(entry);
  let res: ApiResponse;
  if (kind === 'v2') {
    const timing = pick(['standard', 'standard', 'rapid', 'instant']);
    const body: Record<string, unknown> = {
      type: 'payment', amount: major(amount), sender: { account_id: org.customerId, method: chance(0.7) ? card(pick(CARDS)) : bank('123456789') },
      receiver: { account_id: account.id }, funding_timing: timing,
    };
    if (chance(0.3)) body.funding_delay = int(0, 3);
    res = await request(org, 'POST', '/transactions', body, 'v2');
  } else {
    const method = kind === 'card' ? card(pick(CARDS))
      : kind === 'disputed' ? card(pick(['4000 0000 0000 0259', '4000 0000 0000 2685']))
      : bank(chance(0.08) ? '000123456' : '123456789'); // 000…: the bank rejects it a moment later
    res = await request(org, 'POST', '/transactions', { type: 'payment', amount: major(amount), customer_id: org.customerId, processing_id: account.id, payment_method: method });
  }
  expectAcceptable(`pay ${kind}`, res);
  if (res.status === 200) entry.id = res.body.id;
  return `pay ${kind} ${major(amount)} to ${account.style}${account.hasMethod ? '' : '(no method)'} → ${res.status} ${res.body.id ?? ''}`;
}

async function authorize(account: Account): Promise<string> {
  const entry: Made = { id: '', account, amount: randomAmount() };
  authorizations.push(entry);
  const res = await request(account.org, 'POST', '/transactions', {
    type: 'payment', amount: major(entry.amount), status: { value: 'authorized' }, sender: { account_id: account.org.customerId, method: card(pick(CARDS)) }, receiver: { account_id: account.id },
  }, 'v2');
  expectAcceptable('authorize', res);
  if (res.status === 200) entry.id = res.body.id;
  return `authorize for ${account.style} → ${res.status}`;
}

async function settleAuthorization(): Promise<string> {
  const [u, v] = draws(2);
  const open = made(authorizations);
  if (open.length === 0) return 'no authorization to settle';
  const auth = pickOf(u, open);
  authorizations.splice(authorizations.indexOf(auth), 1);
  const to = v < 0.7 ? 'processed' : 'voided';
  const res = expectAcceptable(`authorization → ${to}`, await request(auth.account.org, 'PUT', `/transactions/${auth.id}`, { status: to }));
  if (res.status !== 200) problems.push(`an authorization could not become ${to}: ${JSON.stringify(res.body)}`);
  if (to === 'processed') payments.push(auth);
  return `authorization ${auth.id} → ${to}: ${res.status}`;
}

async function payout(account: Account): Promise<string> {
  const amount = int(1, 20_000);
  const res = expectAcceptable('payout', await request(account.org, 'POST', '/transactions', {
    type: 'credit', amount: major(amount), customer_id: account.org.customerId, processing_id: account.id, payment_method_id: account.org.payoutMethodId,
  }));
  return `payout ${major(amount)} from ${account.style} → ${res.status}`;
}

interface PaymentState {
  id: string;
  status: string;
  funding_status: string | null;
  amount: string;
  refunded: string;
}
async function paymentState(id: string): Promise<PaymentState> {
  const [row] = await rows<PaymentState>(api.db,
    `select p.id, p.data->>'status' as status, p.data->>'funding_status' as funding_status, p.data->>'amount' as amount,
            coalesce((select sum(f.amount) from transfers f join transactions r on r.id = f.transaction_id
                       where f.assoc_transaction_id = p.id and f.entry_type in ('refund', 'chargeback') and r.id <> p.id
                         and r.data->>'status' not in ('voided', 'declined', 'rejected')), 0)::bigint as refunded
       from transactions p where p.id = ?`, [id]);
  return row;
}

function refundRequest(payment: { id: string; account: Account }, amount: number | null): Promise<ApiResponse> {
  const link: Record<string, unknown> = { assoc_transaction_id: payment.id };
  const body: Record<string, unknown> = { type: 'refund', ledger: [link] };
  if (amount !== null) body.amount = major(amount);
  return request(payment.account.org, 'POST', '/transactions', body);
}

async function refund(): Promise<string> {
  const [u, full, over, size] = draws(4);
  const candidates = made(payments);
  if (candidates.length === 0) return 'no payment to refund';
  const payment = pickOf(u, candidates);
  const before = await paymentState(payment.id);
  const refundable = Number(before.amount) - Number(before.refunded);
  const amount = full < 0.35 ? null : over < 0.1 ? refundable + intOf(size, 1, 500) : intOf(size, 1, Math.max(1, refundable));
  const entry: Made = { id: '', account: payment.account, amount: amount ?? refundable };
  refunds.push(entry);
  const res = expectAcceptable('refund', await refundRequest(payment, amount));
  if (res.status === 200) entry.id = res.body.id;
  const fits = before.status === 'processed' && refundable > 0 && (amount === null || amount <= refundable);
  if (!fits && res.status === 200) {
    // A v2 payment may have completed in between, or a refund of it been voided (in a burst, a
    // void of one alongside may commit first); nothing else makes a refund fit that did not.
    const after = await paymentState(payment.id);
    const refundedBesides = Number(after.refunded) - Number(res.body.amount !== undefined ? cents(res.body.amount) : 0);
    const nowRefundable = Number(before.amount) - refundedBesides;
    const voidedBetween = refundedBesides < Number(before.refunded);
    if ((before.status === 'processed' && !voidedBetween) || (amount !== null && amount > nowRefundable)) {
      problems.push(`refund of ${major(amount ?? refundable)} on ${payment.id} (${before.status}, ${major(refundable)} refundable) was accepted`);
    }
  }
  if (fits && res.status !== 200) {
    // Only a change in between (a chargeback, a bank rejection) may refuse it.
    const after = await paymentState(payment.id);
    if (after.status === before.status && after.refunded === before.refunded) problems.push(`refund of ${major(amount ?? refundable)} on ${payment.id} (${major(refundable)} refundable) was refused: ${JSON.stringify(res.body)}`);
  }
  return `refund ${amount === null ? 'full' : major(amount)} of ${payment.id} (${before.status}/${before.funding_status}, ${major(refundable)} left) → ${res.status}`;
}

/** Voids a paying transaction of ours (payment or refund); one already cleared must be refused with a 400. */
async function voidOne(cleared: boolean): Promise<string> {
  const u = random();
  const mine = [...made(payments), ...made(refunds)];
  const states = await rows<{ id: string; type: string }>(api.db,
    `select id, type from transactions where id = any(?::text[]) and data->>'status' = 'processed'
        and data->>'funding_status' ${cleared ? "in ('held', 'funded')" : "= 'pending'"}`, [mine.map((m) => m.id)]);
  const candidates = mine.filter((m) => states.some((s) => s.id === m.id));
  if (candidates.length === 0) return `no ${cleared ? 'cleared' : 'pending'} transaction to void`;
  const target = { ...pickOf(u, candidates), type: '' };
  target.type = states.find((s) => s.id === target.id)!.type;
  const org = target.account.org;
  const res = expectAcceptable('void', await request(org, 'PUT', `/transactions/${target.id}`, { status: 'voided' }));
  if (cleared && (res.status !== 400 || !res.body.details?.status)) problems.push(`void of cleared ${target.id} answered ${res.status} ${JSON.stringify(res.body)}`);
  return `void ${cleared ? 'cleared' : 'pending'} ${target.type} ${target.id} → ${res.status}`;
}

async function balanceOf(account: Account): Promise<Record<string, number>> {
  return (await request(account.org, 'GET', `/processing_accounts/${account.id}?fields=*,balance`)).body.balance;
}

/**
 * A deposit request on a manual account: within, at or over the available balance. In a burst
 * another request may change that balance between its read and the deposit (a deposit of part of
 * it first, a clock move's funding run), so a deposit of all is checked there only for taking
 * something, and the invariants afterwards judge the rest.
 */
async function manualDeposit(inBurst = false): Promise<string> {
  const [u, h, size] = draws(3);
  const account = pickOf(u, accounts.filter((a) => a.style === 'manual'));
  const available = cents((await balanceOf(account)).available);
  const how = pickOf(h, ['all', 'part', 'over', 'over']);
  const amount = how === 'all' ? null : how === 'part' ? intOf(size, 1, Math.max(1, available)) : Math.max(available, 0) + intOf(size, 1, 1000);
  const body: Record<string, unknown> = { type: 'deposit', processing_id: account.id };
  if (amount !== null) body.amount = major(amount);
  const res = expectAcceptable('deposit', await request(account.org, 'POST', '/transactions', body));
  const allowed = account.hasMethod && available > 0 && (amount === null || amount <= available);
  if (!allowed) {
    if (res.status !== 400) problems.push(`deposit of ${amount === null ? 'all' : major(amount)} with ${major(available)} available (method: ${account.hasMethod}) answered ${res.status}`);
    else if (account.hasMethod && !res.body.details?.amount) problems.push(`an over-available deposit's 400 names no amount: ${JSON.stringify(res.body)}`);
  } else if (res.status !== 200) {
    const now = cents((await balanceOf(account)).available);
    if (now === available) problems.push(`deposit of ${amount === null ? 'all' : major(amount)} with ${major(available)} available was refused: ${JSON.stringify(res.body)}`);
  } else if (amount === null && (inBurst ? !(cents(res.body.amount) > 0) : cents(res.body.amount) !== available)) {
    problems.push(`a deposit without an amount took ${res.body.amount}, ${major(available)} was available`);
  }
  return `deposit ${how} ${amount === null ? '' : major(amount)} from manual${account.hasMethod ? '' : '(no method)'} (${major(available)} available) → ${res.status}`;
}

async function moveClock(org: Org, days: number, concurrent = false): Promise<string> {
  const from = await clockOf(org);
  const base = Math.max(from.getTime(), Date.now());
  // Whole seconds, and at least a second past both the clock and real time.
  const to = new Date(Math.ceil((base + days * DAY + 1000) / 1000) * 1000);
  const res = await request(org, 'PUT', '/test_clock', { now: clockText(to) });
  expectAcceptable('clock move', res);
  if (res.status !== 200 && !(concurrent && res.body.details?.now)) problems.push(`clock move to ${clockText(to)} answered ${res.status} ${JSON.stringify(res.body)}`);
  return `clock of ${org.name} +${days}d to ${clockText(to)} → ${res.status}`;
}

async function addFundingMethod(): Promise<string> {
  const account = accounts.find((a) => !a.hasMethod && a.style !== 'manual');
  if (!account) return 'no account left without a funding method';
  const res = await request(account.org, 'POST', '/payment_methods', { ...bank('555666777'), account_id: account.id, account_defaults: { funding: 'deposits' } }, 'v2');
  expectAcceptable('funding method', res);
  if (res.status === 200) account.hasMethod = true;
  else problems.push(`adding a funding method failed: ${JSON.stringify(res.body)}`);
  return `funding method for ${account.style} ${account.id} → ${res.status}`;
}

/** Several requests at once; what each may answer is checked loosely, the invariants afterwards strictly. */
async function burst(): Promise<string> {
  const ops: Array<() => Promise<string>> = [];
  const kinds: string[] = [];
  const candidates = made(payments);
  const payment = candidates.length ? pick(candidates) : null;
  const scenario = pick(['refunds', 'void-vs-refund', 'fund-twice', 'deposits', 'clock-and-requests', 'mixed']);
  kinds.push(scenario);
  if (scenario === 'refunds' && payment) {
    // Refunds of one payment racing: their sum never passes the amount.
    const n = int(2, 4);
    const part = Math.max(1, Math.round(payment.amount / int(1, 3)));
    for (let i = 0; i < n; i++) ops.push(async () => `refund ${(await expectAcceptable('concurrent refund', await refundRequest(payment, chance(0.3) ? null : part))).status}`);
  } else if (scenario === 'void-vs-refund' && payment) {
    ops.push(async () => `void ${(expectAcceptable('concurrent void', await request(payment.account.org, 'PUT', `/transactions/${payment.id}`, { status: 'voided' }))).status}`);
    ops.push(async () => `refund ${(expectAcceptable('concurrent refund', await refundRequest(payment, Math.max(1, Math.floor(payment.amount / 2))))).status}`);
  } else if (scenario === 'fund-twice') {
    // Two direct runs of one account for the same date (the org clock's): one funds, the other finds nothing.
    const account = pick(accounts);
    const asOf = await clockOf(account.org);
    const tenant = { orgId: account.org.orgId, environment: 'test' as const };
    const outcomes: number[] = [];
    for (let i = 0; i < 2; i++) {
      ops.push(async () => {
        const outcome = await fundAccount(api.db, domain, tenant, account.id, asOf);
        outcomes.push(outcome.funded);
        return `fundAccount ${account.style}: ${outcome.funded} funded`;
      });
    }
    ops.push(() => pay(account, 'card'));
    const results = await Promise.all(ops.map((op) => op()));
    // The run that locks the account second finds nothing due, except the payment made alongside (funded by whichever run comes after it).
    if (Math.min(...outcomes) > 1) problems.push(`two runs of ${account.id} for ${asOf.toISOString()} both funded: ${outcomes}`);
    return `burst ${scenario}: ${results.join(' | ')}`;
  } else if (scenario === 'deposits') {
    const account = pick(accounts.filter((a) => a.style === 'manual'));
    const available = cents((await balanceOf(account)).available);
    const statuses: number[] = [];
    for (let i = 0; i < 2; i++) {
      ops.push(async () => {
        const res = expectAcceptable('concurrent deposit', await request(account.org, 'POST', '/transactions', { type: 'deposit', processing_id: account.id }));
        statuses.push(res.status);
        return `deposit all ${res.status}`;
      });
    }
    const results = await Promise.all(ops.map((op) => op()));
    if (statuses.filter((s) => s === 200).length > 1) {
      // Manual money becomes available only in a funding run, and none runs here: the second finds nothing left.
      problems.push(`two concurrent deposits of all ${major(available)} available both succeeded`);
    }
    return `burst ${scenario} (${major(available)} available): ${results.join(' | ')}`;
  } else if (scenario === 'clock-and-requests') {
    const org = pick(orgs);
    ops.push(() => moveClock(org, int(0, 2), true));
    for (let i = int(2, 4); i > 0; i--) ops.push(() => pick([() => pay(pick(accounts.filter((a) => a.org === org)), pick(['card', 'bank', 'v2'])), refund, () => voidOne(false)])());
  }
  if (scenario === 'mixed' || ops.length === 0) {
    for (let i = int(3, 6); i > 0; i--) {
      ops.push(() => pick([
        () => pay(pick(accounts), pick(['card', 'bank', 'v2'])),
        () => pay(pick(accounts), 'card'),
        refund,
        () => voidOne(false),
        () => manualDeposit(true),
        () => moveClock(pick(orgs), int(0, 1), true),
      ])());
    }
  }
  const results = await Promise.all(ops.map((op) => op()));
  return `burst ${kinds.join(',')}: ${results.join(' | ')}`;
}

async function step(): Promise<string> {
  const r = random() * 100;
  if (r < 18) return pay(pick(accounts), 'card');
  if (r < 27) return pay(pick(accounts), 'bank');
  if (r < 34) return pay(pick(accounts), 'v2');
  if (r < 36) return pay(pick(accounts), 'disputed');
  if (r < 38) return authorize(pick(accounts));
  if (r < 40) return settleAuthorization();
  if (r < 42) return payout(pick(accounts));
  if (r < 54) return refund();
  if (r < 60) return voidOne(false);
  if (r < 62) return voidOne(true);
  if (r < 68) return manualDeposit();
  if (r < 78) return burst();
  if (r < 79) return addFundingMethod();
  return moveClock(pick(orgs), int(0, 3));
}

// ---------------------------------------------------------------- the walk

const started = Date.now();
t.test(`funding keeps every account's identity, balanced postings and single funding after each of ${STEPS} random steps (seed ${SEED})`, async (t) => {
  t.ok(await checkAll(t, 'setup'), 'the invariants hold before the first step');
  for (let i = 1; i <= STEPS; i++) {
    const description = await step();
    log.push(`${i}: ${description}`);
    if (!(await checkAll(t, `step ${i}: ${description}`))) {
      t.comment(`FUNDING_SEED=${SEED}: the last steps were\n${log.slice(-15).join('\n')}`);
      break;
    }
  }
  t.comment(`${checks} steps and checks in ${((Date.now() - started) / 1000).toFixed(1)} s (checks ${(checkMs / 1000).toFixed(1)} s); runs funded without a deposit (zero totals): itemized ${zeroRuns.itemized.size}, gross ${zeroRuns.gross.size}, netted ${zeroRuns.netted.size}`);
  if (process.env.FUNDING_VERBOSE) t.comment(JSON.stringify({ gross: [...zeroRuns.gross], netted: [...zeroRuns.netted] }, null, 1));
});

t.test(`once every funding date has passed, every processed paying transaction of an automatic account with a funding method is funded exactly once (seed ${SEED})`, async (t) => {
  // Let the worker finish what the walk started: v2 completions, bank rejections, chargebacks and reversals, instant funding.
  const asynchronous = ['complete_processing', 'bank_reject', 'sandbox_chargeback', 'sandbox_chargeback_reversal', 'fund_instant'];
  const left = await eventually(async () => (await rows<{ n: number }>(api.db, 'select count(*)::int as n from graphile_worker.jobs where task_identifier = any(?::text[])', [asynchronous]))[0].n,
    (n) => n === 0, 20_000, 200);
  t.equal(left, 0, 'the worker finished the asynchronous steps');
  // Funding dates are at most 3 business days after a real processing day; 6 days past the later clock covers them.
  for (const org of orgs) await moveClock(org, 6);
  t.ok(await checkAll(t, 'the final clock move'), 'the invariants hold at the end');
  const automatic = accounts.filter((a) => a.style !== 'manual' && a.hasMethod);
  const unfunded = await rows(api.db,
    `select id, type, data->>'processing_id' as account_id, data->>'funding_status' as funding_status, data->>'funding_date' as funding_date
       from transactions where data->>'processing_id' = any(?::text[]) and type = any(?::text[]) and data->>'status' = 'processed'
        and data->>'funding_status' is distinct from 'funded'`,
    [automatic.map((a) => a.id), PAYING]);
  t.same(unfunded, [], `[seed ${SEED}] every processed paying transaction of ${automatic.length} automatic accounts is funded`);
  const [{ n: fundedCount }] = await rows<{ n: number }>(api.db,
    `select count(*)::int as n from transactions where data->>'processing_id' = any(?::text[]) and data->>'funding_status' = 'funded'`, [automatic.map((a) => a.id)]);
  t.ok(fundedCount > 0, `the walk funded something (${fundedCount} transactions)`);
  // (d) above already holds each of them to one fund operation and one listing; a final balance look:
  for (const account of automatic) {
    const b = await balanceOf(account);
    t.equal(b.pending, 0, `${account.style} ${account.id}: nothing pending at the end`);
    t.equal(b.held, 0, `${account.style} ${account.id}: nothing held at the end`);
  }
  t.comment(`FUNDING_SEED=${SEED}; ${payments.length} payments; ${((Date.now() - started) / 1000).toFixed(1)} s`);
});

/**
 * Manual style (release.ts): a deposit releases available money and "the held transactions it
 * covers, oldest first, become funded". Once all that is available has been deposited, every
 * held transaction is covered, whatever partial deposits came before.
 */
t.test(`once a manual account's whole available balance is deposited, none of its processed transactions is still held (seed ${SEED})`, async (t) => {
  for (const account of accounts.filter((a) => a.style === 'manual' && a.hasMethod)) {
    let before = await balanceOf(account);
    if (before.available <= 0) {
      // Payouts and refunds left it owing: a payment that covers that, cleared, so there is money to release.
      const res = await request(account.org, 'POST', '/transactions', {
        type: 'payment', amount: Math.ceil(-before.available * 2) + 10, customer_id: account.org.customerId, processing_id: account.id, payment_method: card(CARDS[0]),
      });
      t.equal(res.status, 200, 'a covering payment');
      await moveClock(account.org, 6);
      before = await balanceOf(account);
    }
    if (before.available > 0) {
      const res = await request(account.org, 'POST', '/transactions', { type: 'deposit', processing_id: account.id });
      t.equal(res.status, 200, `deposit of all ${before.available} available: ${JSON.stringify(res.body).slice(0, 200)}`);
    }
    const after = await balanceOf(account);
    t.ok(await checkAll(t, `depositing all of ${account.id}`), 'the invariants hold after the deposit');
    if (after.pending !== 0 || after.available !== 0) {
      t.comment(`${account.id}: ${JSON.stringify(after)}: not everything could be released (a negative available balance), nothing to assert`);
      continue;
    }
    const held = await rows<{ id: string; type: string; amount: string }>(api.db,
      `select id, type, data->>'amount' as amount from transactions
        where data->>'processing_id' = ? and data->>'status' = 'processed' and data->>'funding_status' = 'held' order by created_at`, [account.id]);
    t.same(held, [], `[seed ${SEED}] ${account.id}: all released (${JSON.stringify(after)}), nothing held`);
  }
});
