/**
 * Receivers that hang hold sockets, not the worker's concurrency: an attempt unanswered after a
 * second gives its job back (a watch job stands in for it), so with every job slot first taken by
 * new orgs whose receivers never answer, another org's delivery still goes out at once; a hanging
 * attempt that is answered later is recorded once, as its own attempt, and its watch job is dropped. One worker with two job slots.
 */
import http from 'node:http';
import t, { type Test } from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t);
await startTestWorker(t, api.databaseUrl, {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WORKER_CONCURRENCY: '2',
  WEBHOOK_TENANT_CONCURRENCY: '1',
  WORKER_POLL_INTERVAL: '50',
  WEBHOOK_TIMEOUT: '30s',
  WEBHOOK_RETRY_SCHEDULE: '1h',
});

/** Takes requests and answers none until released. */
async function hangingReceiver(t: Test) {
  const held: http.ServerResponse[] = [];
  const state = { requests: 0, released: false };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      state.requests += 1;
      if (state.released) res.writeHead(200).end('ok');
      else held.push(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  const release = () => {
    state.released = true;
    for (const res of held.splice(0)) res.writeHead(200).end('ok');
  };
  return { state, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, release };
}

async function webhook(key: string | undefined, url: string): Promise<void> {
  const res = await api.request('POST', '/webhooks', { key, json: { trigger: 'processing_status', url, retries: 0 } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
}

async function fire(key?: string): Promise<void> {
  const res = await api.request('POST', '/processing_accounts', { key, json: { name: 'Evented' } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
}

t.test('new orgs whose receivers hang take every job slot for a second at most', async (t) => {
  const hanging = await hangingReceiver(t);
  const noisy: string[] = [];
  for (let i = 0; i < 4; i++) {
    const key = await api.newKey(`org_hangs_${i}`, 'test');
    noisy.push(key);
    await webhook(key, `${hanging.url}/o${i}`);
  }
  const fast = await startReceiver(t);
  await webhook(undefined, `${fast.url}/measured`);
  for (const key of noisy) await fire(key);
  t.equal((await eventually(async () => hanging.state.requests, (n) => n >= 2, 10_000)) >= 2, true, 'both job slots hold a hanging attempt');

  const started = Date.now();
  await fire();
  const [arrived] = await fast.waitFor(1, 10_000);
  const waited = arrived ? arrived.at - started : Infinity;
  t.ok(waited < 3000, `the other org's delivery went out ${waited} ms after its event, with every slot first taken by receivers that hang for 30 s`);
  t.equal((await eventually(async () => hanging.state.requests, (n) => n >= 4, 10_000)), 4, 'every hanging org got its attempt out: none waited for another\'s timeout');

  hanging.release();
  const orgs = (await api.db('webhooks').whereRaw(`data->>'url' like ?`, [`${hanging.url}%`]).select('org_id')).map((r: { org_id: string }) => r.org_id);
  const logs = await eventually(
    () => api.db('webhook_logs').whereIn('org_id', orgs).select('data'),
    (rows) => rows.length >= 4 && rows.every((r: { data: { status: string } }) => r.data.status === 'delivered'), 10_000);
  t.same(logs.map((r: { data: { attempt: number; status: string } }) => `${r.data.attempt}:${r.data.status}`).sort(), ['1:delivered', '1:delivered', '1:delivered', '1:delivered'],
    'each answer is recorded as its own first attempt');
  const deliveries = await api.db('webhook_deliveries').whereIn('org_id', orgs).select('state', 'attempts');
  t.same(deliveries.map((d: { state: string; attempts: number }) => `${d.state}:${d.attempts}`), ['delivered:1', 'delivered:1', 'delivered:1', 'delivered:1']);
  const keys = (await api.db('webhook_deliveries').whereIn('org_id', orgs).select('id')).map((d: { id: string }) => `deliver:${d.id}`);
  const left = await eventually(async () => (await api.db.raw(`select count(*)::int as n from graphile_worker.jobs where key = any(?)`, [keys])).rows[0].n as number, (n) => n === 0, 5000);
  t.equal(left, 0, 'no watch job is left once the answers are recorded');
  t.equal(hanging.state.requests, 4, 'nothing was sent twice');
});
