/**
 * `npm run bench:billing`: the invoicing run over BENCH_SCHEDULES billing schedules (default
 * 100,000; invoices/s) and automatic payments over BENCH_DUE_INVOICES due invoices (default 10,000;
 * payments/s), beside the card-payment rate of the API measured in the same run (bench/payments'
 * request). Both billing steps run one schedule / one invoice at a time, as the worker does, so the
 * anchor that compares cost per payment is the API with one connection; the 32-connection API
 * rate is printed too. Target: an automatic payment costs no more than an API payment (≥ 0.8).
 *
 * Postgres as the other benchmarks (DATABASE_URL, else embedded). Schedules and invoices are made
 * through the API in bulk requests of 1,000. Env: BENCH_SCHEDULES, BENCH_DUE_INVOICES,
 * BENCH_SECONDS (API measurement, default 10), BENCH_WARMUP_SECONDS.
 */
// @ts-ignore -- autocannon ships no type declarations
import autocannon from 'autocannon';
import os from 'node:os';
import { loadConfig } from '../api/config.ts';
import { createDb } from '../api/db/connection.ts';
import { createDomainServices } from '../api/domain.ts';
import { collectAutomaticPayments } from '../api/families/billing_schedules/autopay.ts';
import { produceInvoices } from '../api/families/billing_schedules/invoicing.ts';
import { cleanup, positive, SECONDS, startServers, WARMUP_SECONDS } from './harness.ts';

const SCHEDULES = positive('BENCH_SCHEDULES', 100_000);
const DUE_INVOICES = positive('BENCH_DUE_INVOICES', 10_000);
const BATCH = 1000;
const loadBefore = os.loadavg();

const { servers, headers, key, databaseUrl } = await startServers('billing');
process.on('unhandledRejection', (error) => {
  console.error(error);
  void cleanup().finally(() => process.exit(1));
});
const orgId = key.orgId;
const tenant = { orgId, environment: 'test' as const };

async function post(path: string, body: unknown, version = 'v1'): Promise<any> {
  const response = await fetch(servers.settle + path, { method: 'POST', headers: { ...headers, 'X-API-Version': version }, body: JSON.stringify(body) });
  const json = (await response.json()) as any;
  if (response.status !== 200) throw new Error(`setup POST ${path} failed: ${response.status} ${JSON.stringify(json).slice(0, 500)}`);
  return json;
}

await post('/processing_accounts', { name: 'Bench Biller' });
const CARD = { type: 'card', card: { card_number: '4242424242424242', expiry: '12/35', card_code: '123' } };
const payers: string[] = [];
for (let i = 0; i < 100; i++) {
  const customer = await post('/customers', { name: `Payer ${i}`, email: `payer${i}@example.com` });
  await post('/payment_methods', { ...CARD, account_id: customer.id, account_defaults: { paying: 'all' } }, 'v2');
  payers.push(customer.id);
}

// ---- the anchor: API card payments, same run ------------------------------------------------
const paymentBody = JSON.stringify({ type: 'payment', amount: 10.5, customer_id: payers[0], payment_method: CARD, description: 'bench payment' });
async function apiPaymentsPerSecond(connections: number): Promise<number> {
  const options = { url: `${servers.settle}/transactions`, method: 'POST', headers, body: paymentBody, connections, timeout: 10 };
  if (WARMUP_SECONDS > 0) await autocannon({ ...options, duration: WARMUP_SECONDS });
  const result = await autocannon({ ...options, duration: SECONDS });
  if (result.non2xx || result.errors) console.error(`API payments (${connections} conns): ${result.non2xx} non-2xx ${JSON.stringify(result.statusCodeStats)}, ${result.errors} errors — counted out`);
  return (result.requests.total - result.non2xx - result.errors) / SECONDS;
}
const apiSequential = await apiPaymentsPerSecond(1);
const apiConcurrent = await apiPaymentsPerSecond(32);

// ---- the invoicing run over SCHEDULES daily schedules, no autopay --------------------------
const today = new Date().toISOString().slice(0, 10);
let started = Date.now();
for (let made = 0; made < SCHEDULES; made += BATCH) {
  const values = Array.from({ length: Math.min(BATCH, SCHEDULES - made) }, (_, i) => ({
    customer_id: payers[(made + i) % payers.length], start_date: today, recurring_frequency: 'daily', autopay_allowed: false, charges: [{ amount: 10, type: 'plan' }],
  }));
  await post('/billing_schedules', { object: 'list', values });
}
process.stderr.write(`${SCHEDULES} schedules made in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
const db = createDb(databaseUrl, 4);
const domain = createDomainServices(loadConfig({ DATABASE_URL: databaseUrl }));
started = performance.now();
const invoices = await produceInvoices(db, domain, tenant, new Date());
const invoicingSeconds = (performance.now() - started) / 1000;
if (invoices.length !== SCHEDULES) throw new Error(`the invoicing run produced ${invoices.length} invoices for ${SCHEDULES} schedules`);
const again = await produceInvoices(db, domain, tenant, new Date());
if (again.length !== 0) throw new Error(`a second run produced ${again.length} invoices`);

// ---- automatic payments over DUE_INVOICES due invoices -------------------------------------
for (let made = 0; made < DUE_INVOICES; made += BATCH) {
  const values = Array.from({ length: Math.min(BATCH, DUE_INVOICES - made) }, (_, i) => ({
    customer_id: payers[(made + i) % payers.length], due_date: today, autopay_allowed: true, items: [{ entry_type: 'charge', amount: 10.5 }],
  }));
  await post('/invoices', { object: 'list', values });
}
started = performance.now();
const payments = await collectAutomaticPayments(db, domain, tenant, new Date());
const autopaySeconds = (performance.now() - started) / 1000;
if (payments.length !== DUE_INVOICES) throw new Error(`automatic payments made ${payments.length} payments for ${DUE_INVOICES} due invoices`);

const invoicesPerSecond = SCHEDULES / invoicingSeconds;
const autopayPerSecond = DUE_INVOICES / autopaySeconds;
const ratio = autopayPerSecond / apiSequential;
console.log(`\nbilling: Node ${process.version}, ${os.cpus().length} CPUs, ${process.env.DATABASE_URL ? 'server' : 'embedded'} PostgreSQL\n`);
console.log(`invoicing run      ${SCHEDULES} schedules → ${invoices.length} invoices in ${invoicingSeconds.toFixed(1)} s: ${invoicesPerSecond.toFixed(0)} invoices/s (a second run: 0 new)`);
console.log(`automatic payments ${DUE_INVOICES} due invoices → ${payments.length} payments in ${autopaySeconds.toFixed(1)} s: ${autopayPerSecond.toFixed(0)} payments/s`);
console.log(`API card payments  1 connection: ${apiSequential.toFixed(0)} payments/s; 32 connections: ${apiConcurrent.toFixed(0)} payments/s (same run)`);
console.log(`automatic / API (one at a time): ${(ratio * 100).toFixed(1)} % — ${ratio >= 0.8 ? 'PASS' : 'MISS'} (target ≥ 80 %)`);
const round = (l: number[]) => l.map((x) => x.toFixed(1)).join(' ');
console.log(`load average: before ${round(loadBefore)}, after ${round(os.loadavg())}`);

await db.destroy();
await cleanup();
process.exit(0);
