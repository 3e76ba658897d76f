/**
 * The seams of api/seams.ts reach the processes from outside: a random source handed to
 * `startWeb` mints the ids of its requests, and an outbound client handed to `startWorker`
 * carries its webhook deliveries. (The clock: test/entity-verification.test.ts, auth-tenancy's
 * rate limit; the processor: test/processor-seam.test.ts.)
 */
import t from 'tap';
import type { BoundedAnswer, Outbound, OutboundRequest } from '../api/seams.ts';
import { TIME_DIGITS } from '../api/ids.ts';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { seededRandom } from './helpers/seams.ts';
import { eventually } from './helpers/wait.ts';

const customer = { json: { name: 'Seeded', email: 'seeded@example.com' } };

// An id is its minting time (TIME_DIGITS characters after the prefix) and then its random characters.
const randomPart = (id: string) => id.slice(id.indexOf('_') + 1 + TIME_DIGITS);

t.test('two web processes given the same random seed mint the same id for the same first request', async (t) => {
  const first = await startTestApi(t, {}, { random: seededRandom('same') });
  const second = await startTestApi(t, {}, { random: seededRandom('same') });
  const a = await first.request('POST', '/customers', customer);
  const b = await second.request('POST', '/customers', customer);
  t.equal(a.status, 200, JSON.stringify(a.body));
  t.equal(randomPart(b.body.id), randomPart(a.body.id), 'the same random characters');
  t.equal(randomPart(a.body.id).length, 17);
});

t.test('a web process given another seed mints another id', async (t) => {
  const first = await startTestApi(t, {}, { random: seededRandom('one') });
  const second = await startTestApi(t, {}, { random: seededRandom('other') });
  const a = await first.request('POST', '/customers', customer);
  const b = await second.request('POST', '/customers', customer);
  t.equal(a.status, 200, JSON.stringify(a.body));
  t.not(randomPart(b.body.id), randomPart(a.body.id));
});

t.test('a worker given an outbound client delivers webhooks through it, to a host no network knows', async (t) => {
  const api = await startTestApi(t);
  const sent: Array<{ url: string; request: OutboundRequest }> = [];
  const outbound: Outbound = {
    request: async (url, request): Promise<BoundedAnswer> => {
      sent.push({ url, request });
      return { statusCode: 200, headers: {}, body: Buffer.from('ok'), cut: false };
    },
  };
  await startTestWorker(t, api.databaseUrl, { WORKER_POLL_INTERVAL: '50' }, { outbound });
  const webhook = await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: 'https://receiver.invalid/hook' } });
  t.equal(webhook.status, 200, JSON.stringify(webhook.body));
  const account = (await api.request('POST', '/processing_accounts', { json: { name: 'Evented' } })).body;
  await eventually(async () => sent.length, (n) => n > 0, 10_000, 20);
  t.same(sent.map((s) => s.url), ['https://receiver.invalid/hook'], 'one delivery, through the given client');
  t.equal(JSON.parse(sent[0]?.request.body ?? '{}').triggered_on?.id, account.id);
});
