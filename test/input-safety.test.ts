/**
 * Input is data, never prototype: keys that reach an object's prototype are refused wherever a
 * client chooses a key (JSON, form and multipart bodies, query filters, `fields`, `q`), one tenant
 * can never change how the shared process treats another, and nesting and list sizes are bounded.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);
const other = await api.newKey('globex', 'test');
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };

/** What the other tenant sees of the world: it must not change whatever the first one sends. */
async function otherTenantView() {
  const customer = (await api.request('POST', '/customers', { key: other, json: { name: 'Watcher', attrs: { a: 1 } } })).body;
  const projected = await api.request('GET', `/customers/${customer.id}?fields=attrs.zz,attrs.k,name`, { key: other });
  const token = await api.request('POST', '/access_tokens', { key: other, json: { type: 'client', intent: { payment_form: { payment: { amount: 100 } } } } });
  const cheap = await api.request('POST', '/transactions', { key: token.body.id, json: { type: 'payment', amount: 0.01, payment_method: CARD } });
  return { projected: projected.body, tokenStatus: token.status, cheapPayment: cheap.status, pristine: Object.keys(Object.prototype).length };
}

const baseline = await otherTenantView();

t.test('a body key that names a prototype is refused with 400 and nothing is stored', async (t) => {
  const bodies: unknown[] = [
    { name: 'x', '__proto__.zz': 1 },
    JSON.parse('{"name":"x","__proto__":{"zz":1}}'),
    { name: 'x', attrs: JSON.parse('{"__proto__":{"k":"v"}}') },
    { name: 'x', attrs: { nested: { constructor: { prototype: { amount_editable: true } } } } },
    { name: 'x', address: { 'prototype': 'y' } },
  ];
  const before = Number((await api.db('accounts').count('* as n'))[0].n);
  for (const json of bodies) {
    const res = await api.request('POST', '/customers', { json });
    t.equal(res.status, 400, JSON.stringify(json));
    t.equal(res.body.error_type, 'BadRequest');
    t.match(res.body.error_description, /Not allowed as a key/);
  }
  t.equal(Number((await api.db('accounts').count('* as n'))[0].n), before, 'no row written');
});

t.test('form and multipart keys that name a prototype are refused, not silently dropped', async (t) => {
  for (const form of ['name=x&__proto__[zz]=1', 'name=x&attrs[constructor][k]=1', 'name=x&attrs[prototype]=1']) {
    const res = await api.request('POST', '/customers', { form });
    t.equal(res.status, 400, form);
  }
  const multipart = new FormData();
  multipart.set('name', 'x');
  multipart.set('attrs[__proto__][k]', 'v');
  t.equal((await api.request('POST', '/customers', { body: multipart })).status, 400, 'multipart');
});

t.test('a multipart part with no name is a 400, not a 500 (found by bench:fuzz)', async (t) => {
  const body = ['--B', 'Content-Disposition: form-data; name=""', '', '2024-01-31 10:20:30', '--B', 'Content-Disposition: form-data; name="name"', '', 'x', '--B--', ''].join('\r\n');
  const before = Number((await api.db('accounts').count('* as n'))[0].n);
  const res = await api.request('POST', '/customers', { body, headers: { 'Content-Type': 'multipart/form-data; boundary=B' } });
  t.equal(res.status, 400);
  t.match(res.body, { object: 'error', error_type: 'BadRequest', details: { body: 'A part has no name' } });
  t.equal(Number((await api.db('accounts').count('* as n'))[0].n), before, 'nothing written');
});

t.test('query filters, fields and q naming a prototype are 400', async (t) => {
  const customer = (await api.request('POST', '/customers', { json: { name: 'Q', attrs: { a: 1 } } })).body;
  for (const query of [`fields=attrs.__proto__.k`, `fields=attrs[constructor]`, `attrs[__proto__]=1`, `q=attrs.prototype=="x"`]) {
    const res = await api.request('GET', `/customers?${query}`);
    t.equal(res.status, 400, query);
  }
  t.equal((await api.request('GET', `/customers/${customer.id}?fields=attrs.__proto__.k`)).status, 400, 'by id too');
});

t.test('a dotted body key is an unknown field, not a path that reads as nothing', async (t) => {
  const res = await api.request('POST', '/customers', { json: { name: 'Dot', 'address.city': 'Paris' } });
  t.equal(res.status, 400);
  t.same(res.body.details, { address: { city: 'Unknown field' } });
});

t.test('seeded fuzz of prototype keys from one tenant leaves the other tenant unchanged', async (t) => {
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const names = ['__proto__', 'constructor', 'prototype', 'zz', 'k', 'amount_editable', 'attrs', 'name'];
  const pick = () => names[Math.floor(random() * names.length)];
  let refused = 0;
  for (let i = 0; i < 150; i++) {
    const path = Array.from({ length: 1 + Math.floor(random() * 3) }, pick);
    const json = `{"name":"f${i}","attrs":${path.reduceRight((inner, key) => `{"${key}":${inner}}`, '"v"')}}`;
    const query = `fields=${['attrs', ...path].join('.')}`;
    const created = await api.request('POST', `/customers?${query}`, { body: json, headers: { 'Content-Type': 'application/json' } });
    t.ok(created.status < 500, `no 5xx for ${json}`);
    if (created.status === 400) refused++;
    await api.request('GET', `/customers?${query}&limit=1`);
  }
  t.ok(refused > 0, 'the fuzz reached the refusals');
  t.same(await otherTenantView(), baseline, 'the second tenant sees no change');
  t.equal(Object.keys(Object.prototype).length, 0, 'Object.prototype untouched in this process');
});

t.test('nesting deeper than 64 levels is 400, also with an Idempotency-Key', async (t) => {
  const deep = `{"name":"d","attrs":${'{"a":'.repeat(10000)}1${'}'.repeat(10000)}}`;
  const plain = await api.request('POST', '/customers', { body: deep, headers: { 'Content-Type': 'application/json' } });
  t.equal(plain.status, 400);
  t.match(plain.body.error_description, /deeper than 64/);
  const veryDeep = `{"a":${'['.repeat(100000)}${']'.repeat(100000)}}`;
  const keyed = await api.request('POST', '/customers', { body: veryDeep, headers: { 'Content-Type': 'application/json', 'Idempotency-Key': 'deep-1' } });
  t.equal(keyed.status, 400);
  const ok = `{"name":"fine","attrs":${'{"a":'.repeat(60)}1${'}'.repeat(60)}}`;
  t.equal((await api.request('POST', '/customers', { body: ok, headers: { 'Content-Type': 'application/json' } })).status, 200, '60 levels are fine');
});

t.test('a list longer than 1,000 items is 400', async (t) => {
  const res = await api.request('POST', '/customers', { json: { name: 'L', attrs: { many: Array.from({ length: 1001 }, (_, i) => i) } } });
  t.equal(res.status, 400);
  t.match(res.body.error_description, /At most 1000 items/);
});
