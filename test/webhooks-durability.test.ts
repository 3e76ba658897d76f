/**
 * At-least-once delivery across crashes (CONTRACT §8): the worker process is killed with SIGKILL
 * mid-flight and replaced, and PostgreSQL itself is restarted during delivery. Every event
 * reaches a real loopback receiver, which dedups on the event id (the receiver kit), so each id
 * counts exactly once however many times it arrived; and every request that reached it is an
 * attempt the webhook's logs show, those whose answer the crash lost with their outcome unknown.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { loadConfig } from '../api/config.ts';
import { createDb, type Db } from '../api/db/connection.ts';
import { freePort, startEmbeddedPostgres, type EmbeddedServer } from '../api/db/embedded.ts';
import { recordEvents, type EventTenant } from '../api/db/events.ts';
import { migrate } from '../api/db/migrate.ts';
import { hashKey } from '../api/keys.ts';
import { createTestKey } from './helpers/keys.ts';
import { startWeb } from '../api/server.ts';
import { createWebhookReceiver } from '../api/webhooks/receiver.ts';
import { startWorker } from '../workers/main.ts';
import { startTestApi } from './helpers/api.ts';
import { spawnWorker } from './helpers/processes.ts';
import { eventually } from './helpers/wait.ts';
import { PROCESSING_STATUS_TRIGGER } from '../api/families/accounts/triggers.ts';

const TRIGGER = PROCESSING_STATUS_TRIGGER;

function until(condition: () => boolean | Promise<boolean>, ms: number, every = 25): Promise<boolean> {
  return eventually(condition, Boolean, ms, every);
}

interface DedupReceiver {
  url: string;
  /** every request that reached the receiver, duplicates included */
  raw: number;
  /** requests whose signature did not verify */
  rejected: number;
  /** event ids, each once */
  unique: Set<string>;
}

/** A plain node:http receiver verifying signatures and deduplicating on X-Service-Event-Id. */
async function startDedupReceiver(t: Test, secret: () => string, delayMs = 0): Promise<DedupReceiver> {
  const unique = new Set<string>();
  const receiver: DedupReceiver = { url: '', raw: 0, rejected: 0, unique };
  let receive: ReturnType<typeof createWebhookReceiver> | null = null;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      receiver.raw += 1;
      receive ??= createWebhookReceiver({ secret: secret(), seen: unique });
      const { status } = receive(Buffer.concat(chunks), req.headers);
      if (status !== 200) receiver.rejected += 1;
      const answer = () => res.writeHead(status).end(status === 200 ? 'ok' : 'bad signature');
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return receiver;
}

function drafts(count: number, from: number) {
  return Array.from({ length: count }, (_, i) => ({
    trigger: TRIGGER,
    objectType: 'processing_account',
    objectId: `acct_durability_${from + i}`,
    value: { status: 'active', n: from + i },
  }));
}

/** Commits `total` events in transactions of `batch`; returns their ids. */
async function enqueue(db: Db, tenant: EventTenant, total: number, batch: number, from = 0): Promise<string[]> {
  const ids: string[] = [];
  for (let done = 0; done < total; done += batch) {
    const n = Math.min(batch, total - done);
    ids.push(...(await db.transaction((tx) => recordEvents(tx, tenant, drafts(n, from + done)))));
  }
  return ids;
}

function missing(expected: Iterable<string>, got: Set<string>): string[] {
  return [...expected].filter((id) => !got.has(id));
}

/** The logs account for every receipt: each request is a logged attempt, and each repeat follows one whose answer is unknown. */
async function logsCoverReceipts(t: Test, db: Db, webhookId: string, receiver: DedupReceiver): Promise<void> {
  // Receipts first: retries may still be going out, and each is logged before it is sent, so logs
  // read after the receipts cover them, where logs read before would miss those sent meanwhile.
  const received = receiver.raw;
  const repeats = received - receiver.unique.size;
  const [logs] = (await db.raw(`select count(*)::int as attempts, (count(*) filter (where data->>'status' = 'unknown'))::int as unknown
    from webhook_logs where data->>'webhook_id' = ?`, [webhookId])).rows;
  t.ok(logs.attempts >= received, `every request that reached the receiver is a logged attempt (${logs.attempts} attempts, ${received} receipts)`);
  t.ok(logs.unknown >= repeats, `each repeat follows an attempt logged with its outcome unknown (${logs.unknown} unknown, ${repeats} repeats)`);
}

t.test('kill -9 of the worker mid-flight: every one of 2,000 events arrives, each id exactly once after dedup', { timeout: 90_000 }, async (t) => {
  const TOTAL = 2000;
  const started = Date.now();
  const api = await startTestApi(t);
  let secret = '';
  // A few ms per answer, so the kill finds deliveries in flight on the wire as well as locked jobs.
  const receiver = await startDedupReceiver(t, () => secret, 3);
  const created = await api.request('POST', '/webhooks', { json: { trigger: TRIGGER, url: receiver.url } });
  t.equal(created.status, 200, created.status === 200 ? 'webhook created' : JSON.stringify(created.body));
  secret = created.body.sender_secret;
  const key = await api.db('api_keys').where({ key_hash: hashKey(api.key) }).first();
  const tenant = { orgId: key.org_id as string, environment: 'test' };

  const env = { DATABASE_URL: api.databaseUrl, WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_DEAD_AFTER: '2s', LOG_LEVEL: 'warn' };
  const first = spawnWorker(t, env);
  // Running once it has announced itself.
  t.ok(await until(async () => Number((await api.db('worker_heartbeats').count({ n: '*' }))[0].n) > 0, 20_000, 50), 'the first worker is up');

  const enqueuing = enqueue(api.db, tenant, TOTAL, 100);
  t.ok(await until(() => receiver.unique.size >= 300, 30_000, 5), `deliveries began (${receiver.unique.size})`);
  first.child.kill('SIGKILL');
  await first.exited;
  const atKill = receiver.unique.size;
  const ids = await enqueuing;
  t.equal(ids.length, TOTAL, 'all events committed');
  t.ok(atKill < TOTAL, `killed mid-flight: ${atKill} of ${TOTAL} had arrived`);
  const lockedAtKill = Number((await api.db('graphile_worker.jobs').whereNotNull('locked_by').count({ n: '*' }))[0].n);
  t.comment(`at the kill: ${atKill} delivered, ${lockedAtKill} jobs locked by the dead process`);

  const second = spawnWorker(t, env);
  // Every wait below shares what is left of an 85 s budget (the test times out at 90 s).
  const left = () => Math.max(0, started + 85_000 - Date.now());
  const complete = await until(() => receiver.unique.size >= TOTAL, left() - 5000, 50);
  t.ok(complete, `the new worker finished the rest (${receiver.unique.size} of ${TOTAL})\n${complete ? '' : second.output()}`);
  const lost = missing(ids, receiver.unique);
  t.same(lost.slice(0, 10), [], `no event lost (${lost.length} missing)`);
  t.equal(receiver.unique.size, TOTAL, 'the dedup saw each event id exactly once');
  t.ok(receiver.raw >= TOTAL, `at least once: ${receiver.raw} receipts for ${TOTAL} events (${receiver.raw - TOTAL} redeliveries)`);
  t.equal(receiver.rejected, 0, 'every receipt carried a valid signature');
  t.ok(missing(receiver.unique, new Set(ids)).length === 0, 'nothing arrived that was not enqueued');
  // The bookkeeping catches up too: each delivery is recorded delivered.
  const settled = await until(async () => Number((await api.db('webhook_deliveries').where({ state: 'delivered' }).count({ n: '*' }))[0].n) === TOTAL, left(), 100);
  t.ok(settled, 'every delivery is marked delivered');
  await logsCoverReceipts(t, api.db, created.body.id, receiver);
  t.equal(second.child.exitCode, null, 'the new worker is still running');
});

t.test('PostgreSQL restarted during delivery: every event created before and after the restart arrives', { timeout: 120_000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-restart-pg-'));
  // As root, the server runs as a `postgres` user that must be able to enter this directory.
  fs.chmodSync(dir, 0o755);
  const port = await freePort();
  let server: EmbeddedServer | null = await startEmbeddedPostgres(dir, { persistent: true, port });
  t.teardown(async () => {
    if (server) await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await server.createDatabase('settle');
  const databaseUrl = server.url('settle');
  await migrate(databaseUrl);

  const db = createDb(databaseUrl, 4);
  t.teardown(() => db.destroy());
  const key = await createTestKey(db, 'acme', 'test');
  const tenant = { orgId: key.orgId, environment: 'test' };
  const web = await startWeb(loadConfig({ DATABASE_URL: databaseUrl, PORT: '0', LOG_LEVEL: 'silent', SETTLE_RATE_LIMIT: 'off' }), { keyCacheMs: 0 });
  t.teardown(() => web.stop());
  const worker = await startWorker(loadConfig({
    DATABASE_URL: databaseUrl, WEBHOOK_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'silent', WORKER_DEAD_AFTER: '2s', WORKER_POLL_INTERVAL: '100',
    WEBHOOK_RETRY_SCHEDULE: '200ms,500ms,1s,2s,2s,2s,2s,2s',
  }));
  t.teardown(() => worker.stop());

  const authorization = `Basic ${Buffer.from(`${key.secret}:`).toString('base64')}`;
  const call = (method: string, route: string, json: unknown) =>
    fetch(web.url + route, { method, headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify(json) });
  let secret = '';
  const receiver = await startDedupReceiver(t, () => secret, 2);
  const created = await call('POST', '/webhooks', { trigger: TRIGGER, url: receiver.url });
  const webhook = (await created.json()) as { id: string; sender_secret: string };
  t.equal(created.status, 200, created.status === 200 ? 'webhook created' : JSON.stringify(webhook));
  secret = webhook.sender_secret;

  // Before: 800 events committed, delivery under way when the server goes down.
  const before = await enqueue(db, tenant, 800, 50);
  t.ok(await until(() => receiver.unique.size >= 100, 20_000, 5), 'deliveries began');
  const atStop = receiver.unique.size;
  await server.stop();
  server = null;
  t.ok(atStop < before.length, `the server stopped mid-delivery (${atStop} of ${before.length} had arrived)`);
  // The outage lasts until a running process has met it: the web process answers 503.
  t.ok(await until(async () => (await fetch(`${web.url}/customers`, { headers: { authorization } })).status === 503, 10_000, 50), 'the web process sees the database gone');
  server = await startEmbeddedPostgres(dir, { persistent: true, port });
  t.comment(`restarted on port ${server.port}; ${receiver.unique.size} had arrived`);

  // After: events through the outbox (retrying while the pool finds its connections dead) and
  // through the API (each processing account created emits one event).
  const after: string[] = [];
  for (let batch = 0; batch < 8; batch++) {
    const written = await eventually(() => enqueue(db, tenant, 50, 50, 1000 + batch * 50).catch((error: Error) => error),
      (result) => !(result instanceof Error), 5000, 100);
    if (written instanceof Error) throw written;
    after.push(...written);
  }
  const accounts: string[] = [];
  for (let i = 0; i < 20; i++) {
    const response = await eventually(() => call('POST', '/processing_accounts', { name: `After restart ${i}` }), (r) => r.status === 200, 5000, 100);
    if (response.status !== 200) throw new Error(`POST /processing_accounts answered ${response.status}`);
    accounts.push(((await response.json()) as { id: string }).id);
  }
  const fromApi = (await db('events').whereIn('object_id', accounts).select('id')).map((e: { id: string }) => e.id);
  t.equal(fromApi.length, accounts.length, 'one event per account created through the API');

  const everything = [...before, ...after, ...fromApi];
  const complete = await until(() => missing(everything, receiver.unique).length === 0, 60_000, 50);
  const lost = missing(everything, receiver.unique);
  t.ok(complete, `all ${everything.length} events arrived (${lost.length} missing)`);
  t.same(lost.slice(0, 10), [], 'nothing lost across the restart');
  // A webhook is sent the events made from its creation on (the org's first account's is older).
  const stored = (await db('events').where({ trigger: TRIGGER }).where('created_at', '>=', db('webhooks').where({ id: webhook.id }).select('created_at')).select('id'))
    .map((e: { id: string }) => e.id);
  t.same(missing(stored, receiver.unique), [], 'every committed event of the trigger since the webhook was made reached the receiver');
  t.equal(receiver.rejected, 0, 'every receipt carried a valid signature');
  t.comment(`${receiver.raw} receipts for ${receiver.unique.size} events (${receiver.raw - receiver.unique.size} redeliveries)`);
  await logsCoverReceipts(t, db, webhook.id, receiver);
});
