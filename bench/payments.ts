/**
 * `npm run bench:payments`: Settle's v1 card payment creation (POST /transactions with an inline
 * card, JSON, Basic auth; each request stores a payment method, a processed transaction and its
 * events) next to the anchor's create-customer route (bench/anchor-server.ts: one INSERT into
 * `accounts`, measured in the same run).
 *
 * Setup through Settle before measuring: one processing account (the environment's default, so the
 * payments name none) and one customer, the payer of every payment.
 *
 * Env: BENCH_SECONDS (per server, default 10), BENCH_WARMUP_SECONDS (default 2), BENCH_CONNECTIONS
 * (default 32), BENCH_PROFILE=1 (CPU profiles of both servers in bench/results/profiles).
 * Results: the table on stdout, JSON in bench/results/payments.json. See bench/harness.ts.
 */
import os from 'node:os';
import { cleanup, measure, report, startServers, summarize, type Scenario, type Targets } from './harness.ts';

const TARGETS: Targets = { ratio: 0.4, p99Ms: 75 };
const loadBefore = os.loadavg();

const { servers, headers } = await startServers('payments');

async function create(path: string, body: unknown): Promise<{ id: string; status?: string }> {
  const response = await fetch(servers.settle + path, { method: 'POST', headers, body: JSON.stringify(body) });
  const json = (await response.json()) as { id?: string; status?: string };
  if (response.status !== 200 || !json.id) throw new Error(`setup POST ${path} failed: ${response.status} ${JSON.stringify(json)}`);
  return json as { id: string; status?: string };
}

const processing = await create('/processing_accounts', { name: 'Bench Shop' });
const customer = await create('/customers', { name: 'Bench Payer', email: 'payer@example.com' });
const paymentBody = JSON.stringify({
  type: 'payment',
  amount: 10.5,
  customer_id: customer.id,
  description: 'bench payment',
  payment_method: { type: 'card', card: { card_number: '4242424242424242', expiry: '12/35', card_code: '123' } },
});
const first = await create('/transactions', JSON.parse(paymentBody));
if (first.status !== 'processed') throw new Error(`setup payment answered status ${first.status}, expected processed`);
console.error(`setup: processing account ${processing.id}, customer ${customer.id}, a first payment ${first.id} processed`);

const customerBody = JSON.stringify({ name: 'Bench Customer', email: 'bench@example.com' });
const scenarios: Scenario[] = [
  {
    name: 'card-payment',
    targets: {
      settle: { path: '/transactions', options: { method: 'POST', headers, body: paymentBody } },
      anchor: { path: '/customers', options: { method: 'POST', headers, body: customerBody } },
    },
  },
];

const measurements = await measure(servers, scenarios);
const loadAfter = os.loadavg();
const round = (l: number[]) => l.map((x) => Math.round(x * 100) / 100);
report('payments', measurements, summarize(scenarios, measurements, TARGETS), TARGETS, {
  anchor: 'POST /customers on bench/anchor-server.ts (one INSERT), same run',
  loadAverage: { before: round(loadBefore), after: round(loadAfter) },
});
console.log(`load average (1, 5, 15 min): before ${round(loadBefore).join(' ')}, after ${round(loadAfter).join(' ')}`);

await cleanup();
process.exit(0);
