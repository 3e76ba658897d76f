/**
 * Process logs carry no credential or cardholder data (CONTRACT §23): real web and worker
 * processes, at their most verbose level, run the flows that handle secrets — secret keys (Basic,
 * Bearer, unknown), client tokens in headers and in hosted-page paths, a payment link's page, card
 * and bank account numbers, webhook sender secrets (given and generated), an OAuth client secret
 * and the access token it buys, delivered webhooks — and every line they print is scanned for each
 * of those values. A token in a path is logged masked, as its shown prefix.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { projectRoot } from '../api/config.ts';
import { createDb } from '../api/db/connection.ts';
import { freePort } from '../api/db/embedded.ts';
import { createTestKey } from './helpers/keys.ts';
import { freshDatabase } from './helpers/db.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

const databaseUrl = await freshDatabase(t);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-log-scan-'));
t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
const db = createDb(databaseUrl, 2);
t.teardown(() => db.destroy());

interface Running {
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

/** A project process at LOG_LEVEL=trace; everything it prints is kept. */
function run(script: string, env: Record<string, string>): Running {
  const child = spawn(process.execPath, [path.join(projectRoot, script)], {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: databaseUrl, SETTLE_DATA_DIR: dataDir, LOG_LEVEL: 'trace', REPORTING_URL: 'off', WEBHOOK_ALLOW_PRIVATE: 'true', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  t.teardown(stop);
  return { child, output: () => output, stop };
}

const port = await freePort();
const api = `http://127.0.0.1:${port}`;
const web = run('api/server.ts', { PORT: String(port), HOST: '127.0.0.1', SETTLE_PUBLIC_URL: api });
await eventually(() => fetch(`${api}/healthz`).then((r) => r.status, () => 0), (status) => status === 200, 20_000, 100);
const worker = run('workers/main.ts', { WORKER_POLL_INTERVAL: '100' });

const secretKey = (await createTestKey(db, 'acme', 'test')).secret;
const basic = (key: string) => `Basic ${Buffer.from(`${key}:`).toString('base64')}`;

async function call(method: string, route: string, json?: unknown, authorization = basic(secretKey)): Promise<{ status: number; body: any }> {
  const res = await fetch(api + route, {
    method,
    headers: { Authorization: authorization, ...(json === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

t.test('no key, token, card or account number, or secret used in real flows reaches a process log', async (t) => {
  const used: Record<string, string> = { 'secret key': secretKey };
  const unknownKey = `test_secret_key_${'Q'.repeat(32)}`;
  used['unknown key'] = unknownKey;
  t.equal((await call('GET', '/customers', undefined, `Bearer ${secretKey}`)).status, 200, 'Bearer');
  t.equal((await call('GET', '/customers', undefined, basic(unknownKey))).status, 401, 'an unknown key');

  const hooks = await startReceiver(t);
  const auth = await startReceiver(t);
  used['OAuth access token'] = 'oauth-access-token-never-logged-7Hq2';
  auth.respond = () => ({ status: 200, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ access_token: used['OAuth access token'], token_type: 'bearer', expires_in: 3600 }) });
  used['sender secret'] = 'whsec_given-secret-never-logged-91';
  used['OAuth client secret'] = 'oauth-client-secret-never-logged-Zk4';
  const given = await call('POST', '/webhooks', {
    trigger: 'payment', url: `${hooks.url}/hook`, sender_secret: used['sender secret'],
    oauth_params: { auth_url: `${auth.url}/token`, client_id: 'settle-client', client_secret: used['OAuth client secret'], grant_type: 'client_credentials' },
  });
  t.equal(given.status, 200, JSON.stringify(given.body));
  const generated = await call('POST', '/webhooks', { trigger: 'payment', url: `${hooks.url}/other` });
  t.equal(generated.status, 200);
  used['generated sender secret'] = generated.body.sender_secret;

  const shop = (await call('POST', '/processing_accounts', { name: 'Log Shop' })).body;
  const payer = (await call('POST', '/customers', { name: 'Log Payer', email: 'payer@example.com' })).body;
  used['card number'] = '4111111111111111';
  used['spaced card number'] = '4111 1111 1111 1111';
  const card = await call('POST', '/transactions', { type: 'payment', amount: 12, customer_id: payer.id, processing_id: shop.id, payment_method: { type: 'card', card: { card_number: used['spaced card number'], expiry: '12/35', card_code: '737' } } });
  t.equal(card.status, 200, JSON.stringify(card.body));
  used['bank account number'] = '987650004321';
  const bank = await call('POST', '/transactions', { type: 'payment', amount: 13, customer_id: payer.id, processing_id: shop.id, payment_method: { type: 'bank_account', bank_account: { account_number: used['bank account number'], routing_number: '036001808', account_type: 'checking' } } });
  t.equal(bank.status, 200, JSON.stringify(bank.body));

  const clientToken = (await call('POST', '/access_tokens', { type: 'client', intent: { payment_form: { payment: { amount: 5 } } } })).body.id as string;
  used['client token'] = clientToken;
  const paidByToken = await call('POST', '/transactions', { type: 'payment', payment_method: { type: 'card', card: { card_number: '5555555555554444', expiry: '12/35', card_code: '737' } } }, basic(clientToken));
  t.equal(paidByToken.status, 200, JSON.stringify(paidByToken.body));
  used['card number paid by a client token'] = '5555555555554444';

  const checkout = (await call('POST', '/access_tokens', { type: 'client', intent: { checkout_page: { payment: { amount: 7, description: 'Mug' } } } })).body.id as string;
  used['checkout token'] = checkout;
  t.equal((await fetch(`${api}/checkout/${checkout}`)).status, 200, 'the checkout page');
  const framed = (await call('POST', '/access_tokens', { type: 'client', intent: { checkout_plugin: { amount: 8, description: 'Framed mug' } } })).body.id as string;
  used['checkout plugin token'] = framed;
  t.equal((await fetch(`${api}/elements/checkout/${framed}`)).status, 200, 'the checkout element');
  const unknownToken = `test_client_key_${'W'.repeat(32)}`;
  used['unknown client token'] = unknownToken;
  t.equal((await fetch(`${api}/checkout/${unknownToken}`)).status, 404, 'an unknown token\'s page');
  const plugin = (await call('POST', '/access_tokens', { type: 'client', intent: { processing_account_plugin: {} } })).body.id as string;
  used['processing-account token'] = plugin;
  t.equal((await fetch(`${api}/elements/processing-account/${plugin}`)).status, 200, 'the processing-account element');

  const link = (await call('POST', '/payment_links', { type: 'one_time', description: 'Invoice 7', amount: 10 })).body;
  const page = await (await fetch(`${api}/pay/${link.id}`)).text();
  const minted = /(test_client_key_[0-9A-Za-z]+)/.exec(page)?.[1];
  t.ok(minted, 'the payment link page carries a client token');
  used['payment link page token'] = minted!;

  // Both webhooks share the receiver: wait for the OAuth one's deliveries too, which come after its token.
  await eventually(() => hooks.received.filter((r) => r.url === '/hook').length, (n) => n >= 1, 20_000, 20);
  const delivered = await hooks.waitFor(3, 20_000);
  t.ok(delivered.length >= 3, 'the worker delivered the payments\' webhooks');
  t.ok(auth.received.some((r) => r.body.includes('settle-client')), 'and asked the token endpoint with the client credentials');
  used['delivery signature'] = String(delivered[0].headers['x-service-signature']);

  await web.stop();
  await worker.stop();
  const logs = web.output() + worker.output();
  const lines = logs.split('\n').filter((line) => line.startsWith('{'));
  t.ok(lines.filter((line) => JSON.parse(line).msg === 'request').length >= 15, `the web process logged its requests (${lines.length} lines in all)`);
  t.ok(lines.some((line) => line.includes('"name":"worker"')), 'the worker logged too');
  for (const [what, value] of Object.entries(used)) t.notOk(logs.includes(value), `no ${what} in the process logs`);
  const shown = (token: string) => `${token.slice(0, token.length - 24)}…`;
  for (const [route, token] of [['/checkout', checkout], ['/elements/checkout', framed], ['/elements/processing-account', plugin], ['/checkout', unknownToken]]) {
    t.ok(lines.some((line) => JSON.parse(line).path === `${route}/${shown(token)}`), `${route}/<token> is logged masked, as the token's shown prefix`);
  }
});
