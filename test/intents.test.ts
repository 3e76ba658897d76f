/**
 * Intents (both versions) and payment activations (CONTRACT §13): options checked per kind, a
 * client token for element kinds that is spent once and finishes the intent, hosted-page links for
 * link kinds, status events, expiry, tenant scope, all-or-nothing on bad input.
 */
import t from 'tap';
import { loadConfig } from '../api/config.ts';
import { createDomainServices } from '../api/domain.ts';
import { expireLink } from '../api/families/intents/expiry.ts';
import { startTestApi } from './helpers/api.ts';

process.env.SETTLE_PUBLIC_URL = 'https://pay.example.test/';
const api = await startTestApi(t);
const domain = createDomainServices(loadConfig({ DATABASE_URL: api.databaseUrl }));
const V2 = { version: 'v2' };
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35' } };
// The payments made through the tokens below need a processing account to land on.
await api.request('POST', '/processing_accounts', { json: { name: 'Intents Shop' } });

async function statusEvents(id: string): Promise<string[]> {
  const rows = await api.db('events').where({ object_id: id }).orderBy('seq');
  return rows.map((e: any) => `${e.trigger} ${e.value}`);
}

async function count(table: string): Promise<number> {
  return Number((await api.db(table).count('* as n'))[0].n);
}

t.test('an element intent comes with a client token that pays once and finishes the intent', async (t) => {
  const created = await api.request('POST', '/intents', { ...V2, json: { type: 'payment_form', payment_form: { payment: { amount: 12.5, description: 'Tea' } } } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.match(created.body, { object: 'intent', id: /^int_/, type: 'payment_form', status: 'pending', client_token: /^test_client_key_/, url: null });
  t.match(created.body.expires_at, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  const got = await api.request('GET', `/intents/${created.body.id}`, V2);
  t.equal(got.body.client_token, null, 'the token is shown once, not stored in clear');
  t.notMatch(JSON.stringify(await api.db('intents').where({ id: created.body.id }).first()), created.body.client_token);
  const paid = await api.request('POST', '/transactions', { key: created.body.client_token, json: { type: 'payment', amount: 12.5, payment_method: CARD } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  t.equal((await api.request('GET', `/intents/${created.body.id}`)).body.status, 'finished', 'v1 reads it too');
  t.same(await statusEvents(created.body.id), ['intent:status finished']);
  const [finished] = await api.db('events').where({ object_id: created.body.id });
  t.match(finished.id, /^evt_[0-9A-Za-z]{24}$/, 'the event the spent token wrote has an id of the one format');
  const again = await api.request('POST', '/transactions', { key: created.body.client_token, json: { type: 'payment', amount: 12.5, payment_method: CARD } });
  t.equal(again.status, 403, 'one use');
});

t.test('element intent options are checked exactly as for /access_tokens', async (t) => {
  const before = [await count('intents'), await count('access_tokens')];
  const cases: Array<[any, RegExp]> = [
    [{ type: 'checkout_plugin', checkout_plugin: { amount: 10 } }, /checkout_plugin\[description\]/],
    [{ type: 'checkout_plugin', checkout_plugin: { amount: -1, description: 'x' } }, /checkout_plugin\[amount\]/],
    [{ type: 'payment_form', payment_form: { surprise: true } }, /payment_form\[surprise\]/],
    [{ type: 'payment_form', checkout_page: {} }, /checkout_page/],
    [{ type: 'teleport' }, /type/],
    [{ type: 'payment_form', send_to: [{ email: 'a@example.com' }] }, /send_to/],
    [{ type: 'payment_form', status: 'finished' }, /status/],
  ];
  for (const [json, described] of cases) {
    const res = await api.request('POST', '/intents', { ...V2, json });
    t.equal(res.status, 400, `${JSON.stringify(json)}: ${JSON.stringify(res.body)}`);
    t.equal(res.body.error_type, 'InvalidAttributes');
    t.match(res.body.error_description, described);
  }
  t.same([await count('intents'), await count('access_tokens')], before, 'no intent and no token left behind');
});

t.test('a checkout page intent shows its hosted page with the token', async (t) => {
  const res = await api.request('POST', '/intents', {
    json: { type: 'checkout_page', checkout_page: { payment: { amount: 20, description: 'Order 7' }, redirects: { completed_url: 'https://shop.example/done' } } },
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.equal(res.body.url, `https://pay.example.test/checkout/${res.body.client_token}`);
  t.equal(res.body.checkout_page.card_payments, true, 'defaults filled in');
});

t.test('link intents have a hosted page, checked recipients and a 7-day life', async (t) => {
  const res = await api.request('POST', '/intents', {
    ...V2,
    json: {
      type: 'payouts_enrollment_link',
      payouts_enrollment_link: { entity_name: 'Jango', entity_type: 'business', purpose: 'Receive commissions' },
      send_to: [{ name: 'Jango', email: 'jango@example.com' }, { email: 'ops@example.com' }],
    },
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body, { object: 'intent', status: 'pending', url: `https://pay.example.test/enroll/${res.body.id}`, send_to: [{ name: 'Jango', email: 'jango@example.com' }, { name: null, email: 'ops@example.com' }] });
  t.equal(res.body.client_token, undefined, 'links carry no token');
  const life = Date.parse(res.body.expires_at.replace(' ', 'T') + 'Z') - Date.parse(res.body.created_at.replace(' ', 'T') + 'Z');
  t.ok(Math.abs(life - 7 * 24 * 3600 * 1000) < 5000, 'expires in 7 days');
  const checkout = await api.request('POST', '/intents', { ...V2, json: { type: 'checkout_link', checkout_link: { amount: 5, description: 'Tip' }, send_to: { email: 'one@example.com' } } });
  t.equal(checkout.status, 200, JSON.stringify(checkout.body));
  t.equal(checkout.body.url, `https://pay.example.test/checkout/${checkout.body.id}`);
  t.same(checkout.body.send_to, [{ name: null, email: 'one@example.com' }], 'one recipient is a one-item list');
  const enroll = await api.request('POST', '/intents', { ...V2, json: { type: 'account_enrollment_link', account_enrollment_link: { entity: { country: 'CA', type: 'business' } } } });
  t.equal(enroll.status, 200, JSON.stringify(enroll.body));
  t.same(enroll.body.account_enrollment_link.account_template, { type: 'processing' });
  for (const [json, described] of [
    [{ type: 'checkout_link', checkout_link: { description: 'No amount' } }, /checkout_link\[amount\]/],
    [{ type: 'checkout_link', checkout_link: { amount: 5, description: 'x', redirects: { completed_url: 'javascript:alert(1)' } } }, /completed_url/],
    [{ type: 'payouts_enrollment_link', send_to: [{ email: 'not-an-email' }] }, /send_to\[0\]\[email\]/],
    [{ type: 'payouts_enrollment_link', send_to: [{ email: 'a@example.com', cc: 'b@example.com' }] }, /send_to\[0\]\[cc\]/],
    [{ type: 'account_enrollment_link', account_enrollment_link: { entity: { country: 'FR' } } }, /\[entity\]\[country\]/],
  ] as Array<[any, RegExp]>) {
    const bad = await api.request('POST', '/intents', { ...V2, json });
    t.equal(bad.status, 400, JSON.stringify(bad.body));
    t.match(bad.body.error_description, described);
  }
  const changed = await api.request('PUT', `/intents/${res.body.id}`, { ...V2, json: { send_to: [{ email: 'else@example.com' }] } });
  t.equal(changed.status, 400, 'recipients cannot change');
  const tagged = await api.request('PUT', `/intents/${res.body.id}`, { ...V2, json: { attrs: { campaign: 'fall' } } });
  t.equal(tagged.status, 200, JSON.stringify(tagged.body));
  t.same(tagged.body.attrs, { campaign: 'fall' });
});

t.test('a pending intent expires at its time with an intent:status event; a finished one stays', async (t) => {
  const link = (await api.request('POST', '/intents', { ...V2, json: { type: 'checkout_link', checkout_link: { amount: 5, description: 'Late' } } })).body;
  const job = { table: 'intents' as const, id: link.id, org_id: (await api.db('intents').where({ id: link.id }).first()).org_id, environment: 'test' as const };
  t.equal(await expireLink(api.db, domain, job, new Date()), false, 'not before its time');
  t.equal(await expireLink(api.db, domain, job, new Date(Date.now() + 8 * 24 * 3600 * 1000)), true);
  t.equal((await api.request('GET', `/intents/${link.id}`, V2)).body.status, 'expired');
  t.same(await statusEvents(link.id), ['intent:status expired']);
  const queued = await api.db.raw(`select count(*)::int as n from graphile_worker._private_jobs j join graphile_worker._private_tasks k on k.id = j.task_id
      where k.identifier = 'expire_intent' and j.key = ?`, [`expire_intent:${link.id}`]);
  t.equal(queued.rows[0].n, 1, 'its expiry job was enqueued with it');
  const element = (await api.request('POST', '/intents', { ...V2, json: { type: 'payment_method_form' } })).body;
  const saved = await api.request('POST', '/payment_methods', { key: element.client_token, json: CARD });
  t.equal(saved.status, 200, JSON.stringify(saved.body));
  t.equal(await expireLink(api.db, domain, { ...job, id: element.id }, new Date(Date.now() + 3600 * 1000)), false, 'finished before it expired');
  t.equal((await api.request('GET', `/intents/${element.id}`)).body.status, 'finished');
});

t.test('payment activations: v1 links with send_to (or sent_to), pending, expiring', async (t) => {
  const res = await api.request('POST', '/payment_activations', {
    form: 'intent[entity_name]=The Jango Business&intent[purpose]=Receive commissions&intent[type]=bank_account&intent[entity_type]=business&send_to[0][name]=Jango&send_to[0][email]=jango@example.com',
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body, {
    object: 'payment_activation', id: /^pa_/, status: 'pending', account_id: null,
    intent: { entity_name: 'The Jango Business', entity_type: 'business', purpose: 'Receive commissions', type: 'bank_account' },
    send_to: [{ name: 'Jango', email: 'jango@example.com' }], url: `https://pay.example.test/enroll/${res.body.id}`,
  });
  const spelled = await api.request('POST', '/payment_activations', { json: { intent: { entity_name: 'B' }, sent_to: [{ email: 'b@example.com' }] } });
  t.equal(spelled.status, 200, JSON.stringify(spelled.body));
  t.same(spelled.body.send_to, [{ name: null, email: 'b@example.com' }], 'sent_to is send_to');
  const bad = await api.request('POST', '/payment_activations', { json: { intent: { type: 'card' }, send_to: [{ email: 'x' }] } });
  t.equal(bad.status, 400);
  t.match(bad.body.details, { intent: { type: String } });
  const org = (await api.db('payment_activations').where({ id: res.body.id }).first()).org_id;
  t.equal(await expireLink(api.db, domain, { table: 'payment_activations', id: res.body.id, org_id: org, environment: 'test' }, new Date(Date.now() + 8 * 24 * 3600 * 1000)), true);
  t.equal((await api.request('GET', `/payment_activations/${res.body.id}`)).body.status, 'expired');
  t.same(await statusEvents(res.body.id), ['payment_activation:status expired']);
});

t.test('a checkout page token from /access_tokens is an intent made by the intent service: its address with the token is answered, never stored', async (t) => {
  const minted = await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { checkout_page: { payment: { amount: 9, description: 'Page' } } } } });
  t.equal(minted.status, 200, JSON.stringify(minted.body));
  t.match(minted.body, { object: 'access_token', type: 'client', status: 'active', intent: { checkout_page: { payment: { amount: 9 }, card_payments: true, url: `https://pay.example.test/checkout/${minted.body.id}` } } });
  const [row] = await api.db('intents').whereRaw(`data->>'token_hash' is not null`).orderBy('created_at', 'desc').limit(1);
  t.match(row, { type: 'checkout_page', data: { status: 'pending', checkout_page: { payment: { amount: 9 } } } });
  t.notMatch(JSON.stringify(row), minted.body.id, 'the token is not stored in clear, in the page address or anywhere');
  const shown = (await api.request('GET', `/intents/${row.id}`, V2)).body;
  t.notMatch(JSON.stringify(shown), minted.body.id, 'nor shown again');
  const [created] = (await api.request('GET', `/audit_events?object_id=${row.id}`)).body.values;
  t.match(created, { action: 'create', object_type: 'intent', actor: { type: 'secret_key' } });
  t.equal(Number((await api.db.raw(`select count(*)::int as n from graphile_worker.jobs where key = ?`, [`expire_intent:${row.id}`])).rows[0].n), 1, 'its expiry is scheduled');
});

t.test('intents and payment activations belong to one tenant', async (t) => {
  const intent = (await api.request('POST', '/intents', { json: { type: 'checkout_link', checkout_link: { amount: 5, description: 'Mine' } } })).body;
  const activation = (await api.request('POST', '/payment_activations', { json: { intent: { entity_name: 'Mine' } } })).body;
  const other = await api.newKey('other-org', 'test');
  t.equal((await api.request('GET', `/intents/${intent.id}`, { key: other })).status, 404);
  t.equal((await api.request('GET', `/payment_activations/${activation.id}`, { key: other })).status, 404);
  t.same((await api.request('GET', '/intents', { ...V2, key: other })).body.values, []);
  const org = (await api.db('intents').where({ id: intent.id }).first()).org_id;
  t.equal(await expireLink(api.db, domain, { table: 'intents', id: intent.id, org_id: `${org}x`, environment: 'test' }, new Date(Date.now() + 9e8)), false, 'the expiry job names its tenant');
  const token = (await api.request('POST', '/access_tokens', { json: { type: 'client' } })).body.id;
  t.equal((await api.request('GET', '/intents', { key: token })).status, 403, 'a client token cannot read intents');
});

t.test('a client token made through /access_tokens with an element intent is listed as an intent and finishes when used', async (t) => {
  const minted = await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { payment_form: { payment: { amount: 4 } } } } });
  t.equal(minted.status, 200, JSON.stringify(minted.body));
  const listed = (await api.request('GET', '/intents?type=payment_form&status=pending', { version: 'v2' })).body.values;
  t.ok(listed.length >= 1, 'listed as a pending payment_form intent');
  const mine = listed.at(-1);
  t.notMatch(JSON.stringify(listed), minted.body.id, 'the token itself is never shown again');
  await api.request('POST', '/processing_accounts', { json: { name: 'Intent shop' } });
  const paid = await api.request('POST', '/transactions', { key: minted.body.id, json: { type: 'payment', payment_method: { type: 'card', card: { card_number: '4242424242424242', expiry: '12/35' } } } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  t.equal((await api.request('GET', `/intents/${mine.id}`, { version: 'v2' })).body.status, 'finished');
  const count = async () => Number((await api.db('intents').count('* as n'))[0].n);
  const before = await count();
  const none = await api.request('POST', '/access_tokens', { json: { type: 'client' } });
  t.equal(none.status, 200);
  t.equal(await count(), before, 'a token without an intent makes no intent row');
});
