/**
 * Unit tier: how the web process ships its request log (api/http/requestLog.ts) to a store that
 * takes a while to answer each shipment, as reporting does under load.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { RequestLogShipper } from '../../api/http/requestLog.ts';
import { createLogger } from '../../api/logger.ts';
import { storedLogTime, type RequestLogTuple } from '../../api/families/request_logs/family.ts';
import { INGEST_MAX_BYTES, INGEST_MAX_ROWS } from '../../reporting/requestLog.ts';

/**
 * A reporting stand-in answering each shipment after `delayMs`, and the batch sizes it took; a
 * body over `bodyLimit` bytes it refuses with 413, as reporting does past its INGEST_MAX_BYTES.
 */
async function slowStore(t: Test, delayMs: number, bodyLimit = INGEST_MAX_BYTES) {
  const refused = { count: 0 };
  const batches: number[] = [];
  const bodies: number[] = [];
  const ids: string[] = [];
  const agents: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (body.length > bodyLimit) {
        refused.count++;
        res.statusCode = 413;
        res.end('{}');
        return;
      }
      bodies.push(body.length);
      const [columns, ...rows] = body.toString().split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as unknown[]);
      batches.push(rows.length);
      ids.push(...rows.map((row) => row[columns!.indexOf('id')] as string));
      agents.push(...rows.map((row) => row[columns!.indexOf('user_agent')] as string));
      setTimeout(() => res.end('{}'), delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, batches, bodies, ids, agents, refused };
}

function row(n: number, userAgent = 'test'): RequestLogTuple {
  return ['org_a', 'test', `req_${n}`, 'GET', '/customers/:id', '/customers/cus_1', 200, 1, null, null, 'v1', null, '127.0.0.1', userAgent, storedLogTime(Date.now())];
}

t.test('a busy process ships every two seconds or so, not a small batch per round trip to the store', async (t) => {
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
  t.ok(store.batches.length <= 3, `${store.batches.length} shipments for 2.5 s of requests (${store.batches.join(', ')})`);
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

t.test('rows dropped past the bound while a shipment is under way are the oldest, shipped or not; the rest ship once', async (t) => {
  const store = await slowStore(t, 200);
  const shipper = new RequestLogShipper(store.url, undefined, 5, createLogger('silent', 'web'));
  t.teardown(() => shipper.stop());
  for (let i = 0; i < 5; i++) shipper.add(row(i));
  const first = shipper.flush();
  // While rows 0-4 are on their way, 7 more arrive: the 5 in flight and rows 5 and 6 leave the bounded queue.
  for (let i = 5; i < 12; i++) shipper.add(row(i));
  await first;
  t.equal(shipper.pending, 5, 'rows 7-11 wait');
  await shipper.flush();
  t.same(store.ids, ['req_0', 'req_1', 'req_2', 'req_3', 'req_4', 'req_7', 'req_8', 'req_9', 'req_10', 'req_11']);
  t.equal(shipper.pending, 0);
});

t.test('a shipment stays within reporting\'s limits of rows and bytes: long rows go in more shipments, each row once', async (t) => {
  const store = await slowStore(t, 5);
  const shipper = new RequestLogShipper(store.url, undefined, 100_000, createLogger('silent', 'web'));
  t.teardown(() => shipper.stop());
  // About 25 MB of rows: more than one shipment carries.
  const longAgent = 'Mozilla/5.0 '.repeat(42);
  for (let i = 0; i < 40_000; i++) shipper.add(row(i, longAgent));
  await shipper.flush();
  t.same(store.ids, Array.from({ length: 40_000 }, (_, i) => `req_${i}`), 'every row, once, in order');
  t.ok(store.batches.length >= 2 && store.batches.every((rows, i) => rows <= INGEST_MAX_ROWS && store.bodies[i]! <= INGEST_MAX_BYTES),
    `${store.batches.join(', ')} rows in ${store.bodies.join(', ')} bytes`);
});

t.test('rows of any text arrive as they were, across the queue\'s slabs', async (t) => {
  const store = await slowStore(t, 5);
  const shipper = new RequestLogShipper(store.url, undefined, 100_000, createLogger('silent', 'web'));
  t.teardown(() => shipper.stop());
  // Multi-byte text (2 to 4 bytes a character), a quote, a backslash, a line break: about 4 MB.
  const agent = (i: number) => `ü😀€ "q" \\ \n ${i} `.repeat(1 + (i % 60));
  for (let i = 0; i < 5000; i++) shipper.add(row(i, agent(i)));
  await shipper.flush();
  t.same(store.ids, Array.from({ length: 5000 }, (_, i) => `req_${i}`), 'every row, once, in order');
  t.same(store.agents, Array.from({ length: 5000 }, (_, i) => agent(i)), 'each row\'s text as it was');
});

t.test('a steady stream of rows reuses the queue\'s memory rather than allocating it again', async (t) => {
  const store = await slowStore(t, 1);
  const shipper = new RequestLogShipper(store.url, undefined, 100_000, createLogger('silent', 'web'));
  t.teardown(() => shipper.stop());
  const allocate = Buffer.allocUnsafeSlow;
  let allocated = 0;
  Buffer.allocUnsafeSlow = (size: number) => {
    allocated += size;
    return allocate(size);
  };
  t.teardown(() => {
    Buffer.allocUnsafeSlow = allocate;
  });
  // About 60 MB of rows through the queue, 20,000 at a time.
  for (let i = 0; i < 400_000; i++) {
    shipper.add(row(i, 'Mozilla/5.0 (X11; Linux x86_64)'));
    if (i % 20_000 === 19_999) await shipper.flush();
  }
  await shipper.flush();
  t.equal(store.ids.length, 400_000);
  t.ok(allocated <= 8 * 1024 * 1024, `${(allocated / 1024 / 1024).toFixed(0)} MB allocated for the queue`);
});

t.test('a shipment the store refuses as too large goes again in smaller ones, each row once', async (t) => {
  const store = await slowStore(t, 5, 64 * 1024);
  const shipper = new RequestLogShipper(store.url, undefined, 100_000, createLogger('silent', 'web'));
  t.teardown(() => shipper.stop());
  for (let i = 0; i < 3000; i++) shipper.add(row(i));
  await shipper.flush();
  t.same(store.ids, Array.from({ length: 3000 }, (_, i) => `req_${i}`), 'every row, once, in order');
  t.ok(store.bodies.every((bytes) => bytes <= 64 * 1024), `bodies of ${store.bodies.join(', ')} bytes`);
  t.equal(shipper.pending, 0);
  // Later shipments keep to the size the store took: no refusal again for each of them.
  const refusedBefore = store.refused.count;
  for (let i = 3000; i < 6000; i++) shipper.add(row(i));
  await shipper.flush();
  t.equal(store.refused.count, refusedBefore, 'no shipment refused after the first ones');
  t.equal(store.ids.length, 6000);
});

t.test('through an outage the buffer keeps the newest rows up to its bound, in order, and ships exactly them once the store is back', async (t) => {
  const store = await slowStore(t, 0);
  // Nothing listens on the shipper's port at first: a closed server's port.
  const closed = http.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const downUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const down = new RequestLogShipper(downUrl, undefined, 3000, createLogger('silent', 'web'));
  t.teardown(() => down.stop());
  for (let i = 0; i < 20_000; i++) down.add(row(i));
  await t.rejects(down.flush(), 'the store is down: the rows stay');
  t.equal(down.pending, 3000, 'the bound holds');
  // The same queue, shipped to the store once it answers: the 3,000 newest, each once, in order.
  const shipped = new RequestLogShipper(store.url, undefined, 3000, createLogger('silent', 'web'));
  t.teardown(() => shipped.stop());
  for (let i = 0; i < 20_000; i++) shipped.add(row(i));
  await shipped.flush();
  t.same(store.ids, Array.from({ length: 3000 }, (_, i) => `req_${17_000 + i}`));
  t.equal(shipped.pending, 0);
});
