/**
 * Unit tier: how the web process ships its request log (api/http/requestLog.ts) to a store that
 * takes a while to answer each shipment, as reporting does under load.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { RequestLogShipper } from '../../api/http/requestLog.ts';
import { createLogger } from '../../api/logger.ts';
import type { RequestLogRow } from '../../api/families/request_logs/family.ts';

/** A reporting stand-in answering each shipment after `delayMs`, and the batch sizes it took. */
async function slowStore(t: Test, delayMs: number) {
  const batches: number[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      batches.push((JSON.parse(Buffer.concat(chunks).toString()) as { rows: unknown[] }).rows.length);
      setTimeout(() => res.end('{}'), delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, batches };
}

function row(n: number): RequestLogRow {
  return {
    org_id: 'org_a', environment: 'test', id: `req_${n}`, method: 'GET', route: '/customers/:id', path: '/customers/cus_1', status: 200,
    duration_ms: 1, key_prefix: null, idempotency_key: null, api_version: 'v1', error_type: null, ip: '127.0.0.1', user_agent: 'test',
    created_at: new Date().toISOString(),
  };
}

t.test('a busy process ships about once a second, not a small batch per round trip to the store', async (t) => {
  const store = await slowStore(t, 20);
  const shipper = new RequestLogShipper(store.url, undefined, 100_000, createLogger('silent', 'web'));
  t.teardown(() => shipper.stop());
  // 2.5 s of steady requests, one every 2 ms: well under a full batch per second.
  let n = 0;
  const started = Date.now();
  while (Date.now() - started < 2500) {
    shipper.add(row(n++));
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  await shipper.flush();
  t.equal(store.batches.reduce((a, b) => a + b, 0), n, 'every row arrived');
  t.ok(store.batches.length <= 5, `${store.batches.length} shipments for 2.5 s of requests (${store.batches.join(', ')})`);
});

t.test('a flush ships every row queued before it', async (t) => {
  const store = await slowStore(t, 20);
  const shipper = new RequestLogShipper(store.url, undefined, 100_000, createLogger('silent', 'web'));
  t.teardown(() => shipper.stop());
  for (let i = 0; i < 4500; i++) shipper.add(row(i));
  await shipper.flush();
  t.equal(store.batches.reduce((a, b) => a + b, 0), 4500);
  t.equal(shipper.pending, 0);
});
