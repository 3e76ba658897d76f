/**
 * Every response carries X-Request-Id — answers, and errors raised before a key is even read
 * (401, 404, 400) — a sane id the client sent is kept, anything else is replaced by a fresh req_ id.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);
const GENERATED = /^req_[0-9A-Za-z]{24}$/;

t.test('answers and early errors all carry a request id', async (t) => {
  const cases: Array<[string, string, Parameters<typeof api.request>[2], number]> = [
    ['POST', '/customers', { json: { name: 'Ann' } }, 200],
    ['GET', '/customers', { key: null }, 401],
    ['GET', '/customers', { key: 'test_secret_key_nonsense' }, 401],
    ['GET', '/no_such_things/x', {}, 404],
    ['POST', '/customers', { body: '{"name": ', headers: { 'Content-Type': 'application/json' } }, 400],
    ['GET', '/healthz', { key: null }, 200],
  ];
  const seen = new Set<string>();
  for (const [method, path, options, status] of cases) {
    const res = await api.request(method, path, options);
    t.equal(res.status, status, `${method} ${path}`);
    const id = res.headers.get('x-request-id') ?? '';
    t.match(id, GENERATED, `${method} ${path} → ${status} carries a generated id`);
    seen.add(id);
  }
  t.equal(seen.size, cases.length, 'each request its own id');
});

t.test('a sane incoming id is kept, anything else is replaced', async (t) => {
  const kept = await api.request('GET', '/customers', { headers: { 'X-Request-Id': 'lb-7f3a.92:01' } });
  t.equal(kept.headers.get('x-request-id'), 'lb-7f3a.92:01');
  for (const bad of ['', ' ', 'has space', 'x'.repeat(65), 'quote"d', '<script>']) {
    const res = await api.request('GET', '/customers', { headers: { 'X-Request-Id': bad } });
    t.match(res.headers.get('x-request-id'), GENERATED, JSON.stringify(bad));
  }
});
