/**
 * CORS for client-token requests only: a browser on another origin may call the client-token
 * routes with a client token and read the answers (errors included); answers to secret keys carry
 * no CORS headers, so no other origin's script can read them.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);
const ORIGIN = 'http://shop.example.test';
const CARD = { type: 'card', card: { card_number: '4242424242424242', expiry: '12/35' } };

async function raw(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(api.url + path, { method, headers: { Origin: ORIGIN, ...headers, ...(body ? { 'Content-Type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  return { status: res.status, headers: res.headers, body: await res.text() };
}
const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

t.test('a preflight is answered for the client-token routes only', async (t) => {
  const pay = await raw('OPTIONS', '/transactions', { 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization,content-type' });
  t.equal(pay.status, 204);
  t.equal(pay.headers.get('access-control-allow-origin'), ORIGIN);
  t.match(pay.headers.get('access-control-allow-headers'), /Authorization/);
  t.match(pay.headers.get('access-control-allow-methods'), /POST/);
  const customers = await raw('OPTIONS', '/customers', { 'Access-Control-Request-Method': 'GET' });
  t.equal(customers.headers.get('access-control-allow-origin'), null, 'no CORS for other routes');
});

t.test('client-token answers carry CORS headers, errors too; secret-key answers never do', async (t) => {
  const token = (await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { payment_form: { payment: { amount: 5 } } } } })).body.id;
  const bad = await raw('POST', '/transactions', bearer(token), { type: 'payment', amount: 7, payment_method: CARD });
  t.equal(bad.status, 400, 'the amount is fixed');
  t.equal(bad.headers.get('access-control-allow-origin'), ORIGIN, 'the form can read its field errors');
  const paid = await raw('POST', '/transactions', bearer(token), { type: 'payment', payment_method: CARD });
  t.equal(paid.status, 200, paid.body);
  t.equal(paid.headers.get('access-control-allow-origin'), ORIGIN);
  const secret = await raw('GET', '/customers', bearer(api.key));
  t.equal(secret.status, 200);
  t.equal(secret.headers.get('access-control-allow-origin'), null, 'a secret key\'s answer is not readable by another origin');
  const secretWrite = await raw('POST', '/transactions', bearer(api.key), { type: 'payment', amount: 1, payment_method: CARD });
  t.equal(secretWrite.headers.get('access-control-allow-origin'), null);
});
