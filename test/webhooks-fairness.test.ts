/**
 * Webhook delivery against receivers that misbehave: one that streams an endless answer, one
 * tenant's receivers that never answer, host names whose lookups hang, and URLs carrying
 * credentials. One web process and one worker (concurrency 8, so two deliveries of one org in
 * flight at a time) serve every test; each test uses its own orgs and receivers.
 */
import { execFileSync } from 'node:child_process';
import dns from 'node:dns';
import fs from 'node:fs';
import http from 'node:http';
import { syncBuiltinESMExports } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { createDnsLookups } from '../workers/webhooks/dnsLookup.ts';
import { TenantSlots } from '../workers/webhooks/tenantSlots.ts';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

const WEBHOOK_TIMEOUT_MS = 30_000;
const DNS_TIMEOUT_MS = 1000;
const api = await startTestApi(t);
await startTestWorker(t, api.databaseUrl, {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WORKER_CONCURRENCY: '8',
  WORKER_POLL_INTERVAL: '50',
  WEBHOOK_TIMEOUT: `${WEBHOOK_TIMEOUT_MS}ms`,
  WEBHOOK_DNS_TIMEOUT: `${DNS_TIMEOUT_MS}ms`,
  WEBHOOK_RETRY_SCHEDULE: '1h',
});

async function createWebhook(url: string, key?: string, extra: Record<string, unknown> = {}) {
  const res = await api.request('POST', '/webhooks', { key, json: { trigger: 'processing_status', url, ...extra } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body as { id: string };
}

/** One processing account created: one processing_status event for the key's org. */
async function fireEvent(key?: string): Promise<void> {
  const res = await api.request('POST', '/processing_accounts', { key, json: { name: 'Evented' } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
}

async function orgOf(webhookId: string): Promise<string> {
  return (await api.db('webhooks').where({ id: webhookId }).first()).org_id;
}

/**
 * The org's deliveries, and how many of their jobs wait to be taken up: due and not running. None
 * waiting means the worker has taken up every one (it is in flight, or deferred to later).
 */
async function deliveryProgress(orgId: string): Promise<{ deliveries: number; waiting: number; unfinished: number; jobs: number }> {
  const [row] = (await api.db.raw(
    `select (select count(*)::int from webhook_deliveries where org_id = ?) as deliveries,
            (select count(*)::int from webhook_deliveries where org_id = ? and state = 'pending') as unfinished,
            (select count(*)::int from graphile_worker.jobs j join webhook_deliveries d on j.key = 'deliver:' || d.id where d.org_id = ?) as jobs,
            (select count(*)::int from graphile_worker.jobs j join webhook_deliveries d on j.key = 'deliver:' || d.id where d.org_id = ?
                and j.locked_at is null and j.run_at <= now()) as waiting`,
    [orgId, orgId, orgId, orgId])).rows;
  return row;
}

/** The org's answered attempts (an attempt is logged `in_flight` as its request goes out). */
async function logsOf(orgId: string): Promise<Array<Record<string, any>>> {
  return (await api.db('webhook_logs').where({ org_id: orgId })).map((row: { data: Record<string, any> }) => row.data).filter((log) => log.status !== 'in_flight');
}

t.test('a receiver streaming an endless answer is read for 16 KiB and cut off; its 200 is a success', async (t) => {
  const TOTAL = 200 * 1024 * 1024;
  const stream = { sent: 0, closed: false };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      // Lazily, with backpressure: only what the worker (or the sockets' buffers) takes is produced.
      const pump = () => {
        while (stream.sent < TOTAL && !res.destroyed) {
          stream.sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('close', () => (stream.closed = true));
      pump();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  const key = await api.newKey('org_streaming', 'test');
  const webhook = await createWebhook(`http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, key, { retries: 0 });
  const rssBefore = process.memoryUsage().rss;
  let rssPeak = rssBefore;
  const sampling = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 10);
  const started = Date.now();
  await fireEvent(key);
  const orgId = await orgOf(webhook.id);
  const logged = await eventually(async () => (await logsOf(orgId)).length > 0, Boolean, 10_000);
  clearInterval(sampling);
  t.ok(logged, 'the attempt was logged');
  const [log] = await logsOf(orgId);
  t.match(log, { http_status: 200, attempt: 1, error: null }, 'the status decides: a success');
  t.ok(Buffer.byteLength(log.response ?? '') <= 16 * 1024 && /^x+$/.test(log.response), `the logged answer is its first ≤ 16 KiB (${Buffer.byteLength(log.response ?? '')} bytes)`);
  t.ok(Date.now() - started < 5000, `recorded quickly (${Date.now() - started} ms)`);
  t.ok(await eventually(() => stream.closed, Boolean, 5000), 'the worker closed the connection');
  t.ok(stream.sent < 32 * 1024 * 1024, `the receiver got to send only ${(stream.sent / 1048576).toFixed(1)} MiB of 200 MiB`);
  t.ok(rssPeak - rssBefore < 100 * 1024 * 1024, `the process grew by ${((rssPeak - rssBefore) / 1048576).toFixed(0)} MiB`);
});

/** A receiver that holds every request open until released; afterwards it answers 200 at once. */
async function startHangingReceiver(t: Test) {
  const state = { url: '', requests: [] as Array<{ path: string; eventId: string }>, held: [] as http.ServerResponse[], released: false };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      state.requests.push({ path: req.url ?? '', eventId: String(req.headers['x-service-event-id']) });
      if (state.released) res.writeHead(200).end('ok');
      else state.held.push(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  const release = () => {
    state.released = true;
    for (const res of state.held.splice(0)) res.writeHead(200).end('ok');
  };
  return { state, release };
}

t.test("one org's receivers that never answer do not hold up another org's deliveries; each held-back delivery is attempted once", async (t) => {
  const hanging = await startHangingReceiver(t);
  const keyB = await api.newKey('org_hanging', 'test');
  const hooksB = [];
  for (let i = 0; i < 16; i++) hooksB.push(await createWebhook(`${hanging.state.url}/hook${i}`, keyB, { retries: 0 }));
  const fast = await startReceiver(t);
  await createWebhook(fast.url + '/a');
  await fireEvent(keyB);
  await fireEvent(keyB);
  t.ok(await eventually(() => hanging.state.held.length >= 2, Boolean, 5000), 'org B has deliveries hanging');
  const orgB = await orgOf(hooksB[0].id);
  const takenUp = await eventually(() => deliveryProgress(orgB), (p) => p.deliveries === 32 && p.waiting === 0, 10_000);
  t.match(takenUp, { deliveries: 32, waiting: 0 }, "the worker has taken up every one of B's deliveries");
  const started = Date.now();
  await fireEvent();
  const [toA] = await fast.waitFor(1, 8000);
  const latency = toA ? toA.at - started : Infinity;
  t.ok(latency < 3000, `org A's delivery arrived in ${latency} ms with 32 of B's deliveries waiting on a receiver that does not answer (timeout ${WEBHOOK_TIMEOUT_MS} ms)`);
  t.ok(hanging.state.held.length <= 4, `B had ${hanging.state.held.length} requests in flight`);

  hanging.release();
  const done = await eventually(() => deliveryProgress(orgB), (p) => p.unfinished === 0 && p.jobs === 0, 20_000);
  t.match(done, { unfinished: 0, jobs: 0 }, 'every delivery of B was attempted once released, and no job of B is left');
  const logs = await logsOf(orgB);
  t.equal(logs.length, 32, 'one log per delivery: deferrals are not attempts');
  t.same(new Set(logs.map((l) => `${l.attempt}:${l.http_status}`)), new Set(['1:200']), 'each a first attempt, delivered');
  t.equal(hanging.state.requests.length, 32, 'the receiver got 32 requests');
  t.equal(new Set(hanging.state.requests.map((r) => `${r.path} ${r.eventId}`)).size, 32, '…each (webhook, event) once');
  const deliveries = await api.db('webhook_deliveries').where({ org_id: orgB });
  t.same(new Set(deliveries.map((d: { state: string; attempts: number }) => `${d.state}:${d.attempts}`)), new Set(['delivered:1']));
});

t.test('webhook URLs carrying credentials are refused on create and update, and never echoed', async (t) => {
  for (const url of ['https://user:s3cr3t-pw@example.com/hook', 'https://token@example.com/hook', 'http://:s3cr3t-pw@example.com/']) {
    const res = await api.request('POST', '/webhooks', { json: { trigger: 'payment', url } });
    t.equal(res.status, 400, url);
    t.equal(res.body.error_type, 'InvalidAttributes');
    t.match(res.body.details, { url: /credentials/i });
    t.notMatch(JSON.stringify(res.body), /s3cr3t-pw|token@/, 'the credentials are not echoed');
  }
  const oauth = await api.request('POST', '/webhooks', {
    json: { trigger: 'payment', url: 'https://example.com/hook', oauth_params: { auth_url: 'https://id:s3cr3t-pw@auth.example.com/token', client_id: 'a', client_secret: 'b', grant_type: 'client_credentials' } },
  });
  t.equal(oauth.status, 400);
  t.match(oauth.body.details, { oauth_params: { auth_url: /credentials/i } });
  t.notMatch(JSON.stringify(oauth.body), /s3cr3t-pw/);

  const created = await createWebhook('https://example.com/hook');
  const put = await api.request('PUT', `/webhooks/${created.id}`, { json: { url: 'https://user:s3cr3t-pw@example.com/hook' } });
  t.equal(put.status, 400);
  t.match(put.body.details, { url: /credentials/i });
  const putOauth = await api.request('PUT', `/webhooks/${created.id}`, {
    json: { oauth_params: { auth_url: 'https://id:s3cr3t-pw@auth.example.com/token', client_id: 'a', client_secret: 'b', grant_type: 'client_credentials' } },
  });
  t.equal(putOauth.status, 400);
  const read = await api.request('GET', `/webhooks/${created.id}`);
  t.equal(read.body.url, 'https://example.com/hook', 'the webhook is unchanged');
  t.notMatch(JSON.stringify(read.body), /s3cr3t-pw/, 'no credentials were stored');
});

/**
 * Stands in for a system resolver that does not answer: a lookup of a `*.slow.invalid` name holds
 * a libuv pool thread (an open of a FIFO nobody writes to, as getaddrinfo waits on the network)
 * until released, then fails. Other names resolve as usual.
 */
function hangingResolver(t: Test) {
  const fifo = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'settle-dns-')), 'resolver');
  execFileSync('mkfifo', [fifo]);
  const original = dns.lookup;
  const calls = new Map<string, number>();
  const state = { pending: 0, calls };
  const lookup = (hostname: string, options: unknown, callback?: (...args: unknown[]) => void) => {
    const cb = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void;
    if (!hostname.endsWith('.slow.invalid')) return (original as (...args: unknown[]) => void)(hostname, ...(typeof options === 'function' ? [] : [options]), cb);
    calls.set(hostname, (calls.get(hostname) ?? 0) + 1);
    state.pending += 1;
    fs.open(fifo, 'r', (error, fd) => {
      state.pending -= 1;
      if (!error) fs.close(fd, () => {});
      cb(Object.assign(new Error(`getaddrinfo EAI_AGAIN ${hostname}`), { code: 'EAI_AGAIN', hostname }));
    });
  };
  dns.lookup = lookup as typeof dns.lookup;
  syncBuiltinESMExports();
  let writer: number | null = null;
  // The writer stays open for the rest of the process: every waiting and later open returns.
  const release = () => void (writer ??= fs.openSync(fifo, fs.constants.O_RDWR));
  t.teardown(() => {
    release();
    dns.lookup = original;
    syncBuiltinESMExports();
  });
  return { state, release };
}

t.test("lookups that hang fail after WEBHOOK_DNS_TIMEOUT, are not repeated at once, and do not hold up another org's deliveries", async (t) => {
  const resolver = hangingResolver(t);
  const keyC = await api.newKey('org_bad_dns', 'test');
  const hooksC = [];
  for (let i = 0; i < 6; i++) hooksC.push(await createWebhook(`http://h${i}.slow.invalid/hook`, keyC, { retries: 0 }));
  // The good receiver is reached by name, so its delivery needs a lookup too.
  const fast = await startReceiver(t);
  await createWebhook(fast.url.replace('127.0.0.1', 'localhost') + '/dns');
  await fireEvent(keyC);
  t.ok(await eventually(() => resolver.state.pending >= 2, Boolean, 5000), 'lookups for org C hang');
  const orgC = await orgOf(hooksC[0].id);
  const takenUp = await eventually(() => deliveryProgress(orgC), (p) => p.deliveries === 6 && p.waiting === 0, 10_000);
  t.match(takenUp, { deliveries: 6, waiting: 0 }, "the worker has taken up every one of C's deliveries");
  const started = Date.now();
  await fireEvent();
  const [toA] = await fast.waitFor(1, 8000);
  const latency = toA ? toA.at - started : Infinity;
  t.ok(latency < 3000, `org A's delivery arrived in ${latency} ms with ${resolver.state.pending} lookups hanging`);

  t.ok(await eventually(async () => (await logsOf(orgC)).length >= 6, Boolean, 8000), "every one of C's deliveries failed and was logged");
  const logs = await logsOf(orgC);
  t.equal(logs.length, 6);
  for (const log of logs) {
    t.match(log, { http_status: null, attempt: 1 });
    t.match(log.error, /DNS|lookup/i, log.error);
    t.ok(log.duration_ms < DNS_TIMEOUT_MS + 1500, `failed in ${log.duration_ms} ms, not after WEBHOOK_TIMEOUT`);
  }
  t.ok(logs.some((l) => /timed out/.test(l.error)), 'a lookup that does not answer times out');

  // The resolver answers again (a failure); a name that just failed is not asked again at once.
  resolver.release();
  t.ok(await eventually(() => resolver.state.pending === 0, Boolean, 5000));
  const asked = new Map(resolver.state.calls);
  await fireEvent(keyC);
  t.ok(await eventually(async () => (await logsOf(orgC)).length >= 12, Boolean, 8000), 'the next event was attempted too');
  for (const [name, count] of resolver.state.calls) {
    if (/timed out/.test(logs.find((l) => l.url.includes(name))?.error ?? '')) t.equal(count, asked.get(name), `${name} failed recently: answered from the failure cache`);
    t.ok(count <= 2, `${name} looked up ${count} times`);
  }
});

t.test('lookups: one system lookup per name at a time, and an org with unanswered lookups cannot start more', async (t) => {
  const asked: string[] = [];
  const answer = new Map<string, (error: Error | null, addresses?: unknown) => void>();
  const lookups = createDnsLookups({
    timeoutMs: 5000, pendingPerTenant: 2,
    lookup: (hostname, _options, callback) => {
      asked.push(hostname);
      answer.set(hostname, callback);
    },
  });
  const resolve = (org: string, hostname: string) => new Promise<{ error: Error | null; addresses?: unknown }>((done) => {
    lookups.forTenant(org)(hostname, { all: true }, (error, addresses) => done({ error, addresses }));
  });
  const fromA = resolve('org_a', 'shared.example');
  const fromB = resolve('org_b', 'shared.example');
  t.same(asked, ['shared.example'], 'two requests, one system lookup');
  answer.get('shared.example')!(null, [{ address: '93.184.215.14', family: 4 }]);
  t.same([(await fromA).addresses, (await fromB).addresses], [[{ address: '93.184.215.14', family: 4 }], [{ address: '93.184.215.14', family: 4 }]]);

  const held = [resolve('org_a', 'x1.example'), resolve('org_a', 'x2.example')];
  const refused = await resolve('org_a', 'x3.example');
  t.match(refused.error?.message, /unanswered/, 'a third unanswered lookup of one org fails at once');
  t.notOk(asked.includes('x3.example'), 'without asking the system');
  const other = resolve('org_b', 'x4.example');
  t.ok(asked.includes('x4.example'), 'another org still looks names up');
  for (const name of ['x1.example', 'x2.example', 'x4.example']) answer.get(name)!(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }));
  await Promise.all([...held, other]);
  const again = await resolve('org_a', 'x1.example');
  t.equal((again.error as NodeJS.ErrnoException).code, 'ENOTFOUND', 'a failed name fails again at once');
  t.equal(asked.filter((name) => name === 'x1.example').length, 1, '…from the failure cache');
});

t.test('tenant slots: over the limit an org waits while its attempts are young, and defers once they are not', async (t) => {
  let now = 0;
  const slots = new TenantSlots(1, () => now);
  const first = await slots.acquire('org_b');
  t.ok(first, 'under the limit: at once');
  const waiting = slots.acquire('org_b');
  t.ok(await slots.acquire('org_a'), 'another org has room');
  t.equal(first!.release(), false, 'the ended attempt hands its slot to the waiting one');
  const second = await waiting;
  t.ok(second, 'the waiting attempt got the slot');
  second!.sending();
  now = 1000;
  t.equal(await slots.acquire('org_b'), null, 'its attempt in flight is old (a slow receiver): defer instead of waiting');
  slots.deferredJob('org_b', '17');
  slots.deferredJob('org_b', '18');
  t.equal(slots.deferredCount('org_b'), 2);
  t.equal(second!.release(), true, 'no one waiting: the slot is free');
  t.equal(slots.nextDeferred('org_b'), '17', 'the oldest deferred job is brought forward first');
  t.ok(await new TenantSlots(0).acquire('org_b'), 'limit 0: no limit');
});

t.test('tenant slots: an org alone in the worker whose receivers have answered goes past its limit up to the slow budget, and is held to its limit once another org arrives', async (t) => {
  let now = 0;
  const slots = new TenantSlots(2, () => now, 8); // slow budget: 6 of 8
  const first = await Promise.all([slots.acquire('org_a'), slots.acquire('org_a')]);
  t.equal(slots.hasRoom('org_a'), false, 'at its limit before any of its receivers has answered');
  for (const slot of first) slot!.sending();
  now = 50;
  for (const slot of first) slot!.release();
  const alone = await Promise.all(Array.from({ length: 6 }, () => slots.acquire('org_a')));
  t.ok(alone.every(Boolean), 'six attempts in flight at once, past the limit of 2');
  for (const slot of alone) slot!.sending();
  t.equal(slots.hasRoom('org_a'), false, 'not past the slow budget');
  const other = await slots.acquire('org_b');
  t.ok(other, 'another org arriving has room at once');
  alone.pop()!.release();
  t.equal(slots.hasRoom('org_a'), false, 'with another org here, the first is held to its limit again');
  const waiting = slots.acquire('org_a');
  alone.pop()!.release();
  alone.pop()!.release();
  alone.pop()!.release();
  t.equal(alone.pop()!.release(), false, 'back under its limit, an ended attempt hands its slot to the waiting one');
  t.ok(await waiting);
  // Its last answer more than a second ago (ANSWERS_FLOWING_MS): its requests out are judged by their age again.
  now = 1100;
  other!.release();
  t.equal(await slots.acquire('org_a'), null, 'alone again, but its attempt in flight is old (a slow receiver): defer');
});
