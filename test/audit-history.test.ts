/**
 * The audit history, as each kind of actor makes it: every change appends an audit event in the
 * change's own transaction (a failed change leaves none), naming who (secret key, client token,
 * console, CLI, worker job), what, the fields before and after, the request id and the address.
 * No secret or full number is ever stored in it; the table refuses changes; another org sees none.
 */
import t from 'tap';
import { loadConfig } from '../api/config.ts';
import { applyRetention } from '../workers/tasks/retention.ts';
import { runSettle } from './helpers/cli.ts';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t, { SETTLE_AUTH_WINDOW: '400' });
await startTestWorker(t, api.databaseUrl, { SETTLE_AUTH_WINDOW: '400', WORKER_POLL_INTERVAL: '100' });

const CARD_NUMBER = '4242424242424242';
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '987' } };
const keyPrefix = api.key.slice(0, api.key.length - 24);

async function historyOf(objectId: string, key = api.key) {
  const res = await api.request('GET', `/audit_events?object_id=${objectId}&order_by=asc(created_at)`, { key });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body.values as Array<Record<string, any>>;
}

async function storedEvents(objectId: string): Promise<number> {
  return (await api.db.raw(`select count(*)::int as n from audit_events where data->>'object_id' = ?`, [objectId])).rows[0].n;
}

const settle = (args: string[]) => runSettle(api.databaseUrl, args);

t.test('a secret key creates, updates and deletes: each is an event with its request id and address', async (t) => {
  const made = await api.request('POST', '/customers', { json: { name: 'Ann', email: 'ann@example.com' }, headers: { 'X-Request-Id': 'lb-create-1' } });
  t.equal(made.status, 200);
  const id = made.body.id;
  await api.request('PUT', `/customers/${id}`, { json: { name: 'Ann B' } });
  const removed = await api.request('DELETE', `/customers/${id}`);
  const history = await historyOf(id);
  t.same(history.map((e) => e.action), ['create', 'update', 'delete']);
  const [created, updated, deleted] = history;
  t.match(created, { object: 'audit_event', id: /^aud_[0-9A-Za-z]{24}$/, actor: { type: 'secret_key', key_prefix: keyPrefix }, object_type: 'account', object_id: id, request_id: 'lb-create-1' });
  t.match(created.ip, /127\.0\.0\.1/);
  t.same(created.changes.name, [null, 'Ann']);
  t.same(updated.changes, { name: ['Ann', 'Ann B'] }, 'an update shows only what changed');
  t.equal(deleted.request_id, removed.headers.get('x-request-id'), 'the event carries the response\'s X-Request-Id');
  t.same(deleted.changes.name, ['Ann B', null]);
});

t.test('a card payment: the payment and its card are events, with no full number, card code or sealed copy anywhere', async (t) => {
  const customer = (await api.request('POST', '/customers', { json: { name: 'Payer' } })).body;
  const paid = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 12.5, customer_id: customer.id, payment_method: CARD } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  const [payment] = await historyOf(paid.body.id);
  t.match(payment, { action: 'create', object_type: 'transaction', actor: { type: 'secret_key' }, request_id: paid.headers.get('x-request-id') });
  t.same(payment.changes.amount, [null, 12.5], 'money as the API shows it');
  const method = await historyOf(paid.body.payment_method_id ?? paid.body.payment_method?.id);
  t.equal(method.length, 1, 'the inline card is an event of its own');
  const dump = (await api.db.raw(`select string_agg(data::text, ' ') as all from audit_events`)).rows[0].all as string;
  t.notOk(dump.includes(CARD_NUMBER), 'no full card number');
  t.notOk(/sealed|card_code|"987"|fingerprint/.test(dump), 'no sealed copy, card code or fingerprint');
  t.match(dump, /xxxxxxxxxxxx4242/, 'the masked number is there');
});

t.test('a webhook secret never enters the history', async (t) => {
  const hook = await api.request('POST', '/webhooks', { json: { trigger: 'processed', url: 'https://example.com/hook', sender_secret: 'a-very-secret-value-123' } });
  t.equal(hook.status, 200, JSON.stringify(hook.body));
  t.equal(await storedEvents(hook.body.id), 1);
  const dump = (await api.db.raw(`select string_agg(data::text, ' ') as all from audit_events`)).rows[0].all as string;
  t.notOk(dump.includes('a-very-secret-value-123'));
});

t.test('a change to a secret alone is an event naming it, its values redacted', async (t) => {
  const oauth = { auth_url: 'https://auth.example.com/token', client_id: 'settle', client_secret: 'first-client-secret', grant_type: 'client_credentials' };
  const hook = await api.request('POST', '/webhooks', { json: { trigger: 'processed', url: 'https://example.com/hook', oauth_params: oauth } });
  t.equal(hook.status, 200, JSON.stringify(hook.body));
  const secret = await api.request('PUT', `/webhooks/${hook.body.id}`, { json: { sender_secret: 'the-second-secret-value' } });
  t.equal(secret.status, 200, JSON.stringify(secret.body));
  const client = await api.request('PUT', `/webhooks/${hook.body.id}`, { form: 'oauth_params[client_secret]=the-second-client-secret' });
  t.equal(client.status, 200, JSON.stringify(client.body));
  const [, senderChange, clientChange] = await historyOf(hook.body.id);
  t.match(senderChange, { action: 'update', actor: { type: 'secret_key' } });
  t.same(senderChange.changes, { sender_secret_sealed: ['[redacted]', '[redacted]'] });
  t.same(clientChange.changes, { 'oauth_params.client_secret_sealed': ['[redacted]', '[redacted]'] });
  const dump = (await api.db.raw(`select string_agg(data::text, ' ') as all from audit_events`)).rows[0].all as string;
  for (const value of ['the-second-secret-value', 'first-client-secret', 'the-second-client-secret']) t.notOk(dump.includes(value), `not ${value}`);
});

t.test('a failed change leaves no event: the request\'s transaction rolls back both', async (t) => {
  const before = (await api.db.raw(`select count(*)::int as n from audit_events`)).rows[0].n;
  const bulk = await api.request('POST', '/customers', { json: { object: 'list', values: [{ name: 'Fine' }, { name: 'Bad', email: 'not-an-email' }] } });
  t.equal(bulk.status, 400);
  const account = await api.request('POST', '/processing_accounts', { json: { name: 'Half', payment_methods: [{ type: 'bank_account', bank_account: { routing_number: '1', account_number: '12' } }] } });
  t.equal(account.status, 400, 'the account row was written, then its nested method failed');
  t.equal((await api.db.raw(`select count(*)::int as n from audit_events`)).rows[0].n, before);
  await t.rejects(api.db.transaction(async (tx) => {
    await tx.raw(`insert into accounts (id, org_id, environment, type, data) values ('acct_rolledback', 'x', 'test', 'customer', '{}')`);
    throw new Error('undo');
  }));
  t.equal(await storedEvents('acct_rolledback'), 0);
});

t.test('a client token, the console and the CLI are actors of their own', async (t) => {
  const token = (await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { payment_form: { payment: { amount: 7 } } } } })).body.id;
  const paid = await api.request('POST', '/transactions', { key: token, json: { type: 'payment', payment_method: CARD } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  t.match((await historyOf(paid.body.id))[0].actor, { type: 'client_token', key_prefix: token.slice(0, token.length - 24), name: 'payment_form' });

  const viaConsole = await api.request('POST', '/customers', { json: { name: 'From the console' }, headers: { 'X-Settle-Console': '1' } });
  t.match((await historyOf(viaConsole.body.id))[0].actor, { type: 'console', key_prefix: keyPrefix });

  const made = await settle(['keys', 'create', '--org', 'acme', '--env', 'test']);
  t.equal(made.code, 0, made.stderr);
  const secret = made.stdout.trim();
  const [row] = (await api.db.raw(`select id from api_keys where key_prefix = ?`, [secret.slice(0, secret.length - 24)])).rows;
  const history = await historyOf(row.id);
  t.match(history, [{ action: 'create', object_type: 'api_key', actor: { type: 'cli', name: 'settle keys create' } }]);
  t.notOk(JSON.stringify(history).includes(secret), 'not the key');
  t.notOk(JSON.stringify(history).includes('hash'), 'nor its hash');
});

async function postForm(path: string, form: Record<string, string>): Promise<{ status: number; requestId: string | null }> {
  const res = await fetch(api.url + path, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
  await res.arrayBuffer();
  return { status: res.status, requestId: res.headers.get('x-request-id') };
}

t.test('a hosted page is the actor of what its form changes: the page, and the link or client token in its address', async (t) => {
  const link = (await api.request('POST', '/intents', { version: 'v2', json: { type: 'payouts_enrollment_link', payouts_enrollment_link: { entity_name: 'Jango' } } })).body;
  const enrolled = await postForm(`/enroll/${link.id}`, { name: 'Ann Payee', routing_number: '036001808', account_number: '123456789' });
  t.equal(enrolled.status, 200);
  const finished = (await historyOf(link.id)).at(-1)!;
  t.match(finished, { action: 'update', actor: { type: 'client_token', key_prefix: link.id, name: 'page:enroll' }, request_id: enrolled.requestId, changes: { status: ['pending', 'finished'] } });
  t.match(finished.ip, /127\.0\.0\.1/);
  const payee = (await api.request('GET', `/intents/${link.id}`, { version: 'v2' })).body.account_id;
  t.match((await historyOf(payee))[0], { action: 'create', actor: { type: 'client_token', name: 'page:enroll' }, request_id: enrolled.requestId });

  const token = (await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { processing_account_plugin: {} } } })).body.id as string;
  const opened = await postForm(`/elements/processing-account/${token}`, { name: 'Framed Shop', legal_name: 'Framed Shop LLC', tax_id: '361234567', routing_number: '036001808', account_number: '555123456' });
  t.equal(opened.status, 200);
  const [event] = (await api.request('GET', `/audit_events?request_id=${opened.requestId}&object_type=account`)).body.values;
  t.match(event, { action: 'create', actor: { type: 'client_token', key_prefix: token.slice(0, token.length - 24), name: 'page:processing_account' } });
  t.notOk(JSON.stringify(event).includes(token), 'not the token itself');

  const intent = (await api.request('POST', '/intents', { version: 'v2', json: { type: 'processing_account_plugin', processing_account_plugin: {} } })).body;
  const framed = await postForm(`/elements/processing-account/${intent.client_token}`, { name: 'Intent Shop', legal_name: 'Intent Shop LLC', tax_id: '361234568', routing_number: '036001808', account_number: '555123457' });
  t.equal(framed.status, 200);
  const recorded = (await api.request('GET', `/intents/${intent.id}`, { version: 'v2' })).body.account_id;
  t.match(recorded, /^acct_/, 'the intent records the account its token opened');
  t.match((await historyOf(intent.id)).at(-1), { action: 'update', actor: { type: 'client_token', name: 'page:processing_account' }, request_id: framed.requestId, changes: { account_id: [null, recorded] } });
});

t.test('a worker job is the actor of what it changes: an expired authorization is voided by expire_authorization', async (t) => {
  const customer = (await api.request('POST', '/customers', { json: { name: 'Waits' } })).body;
  const token = (await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { payment_form: { payment: { amount: 5, status: 'authorized', customer_id: customer.id } } } } })).body.id;
  const auth = await api.request('POST', '/transactions', { key: token, json: { type: 'payment', payment_method: CARD } });
  t.equal(auth.body.status, 'authorized', JSON.stringify(auth.body));
  const history = await eventually(() => historyOf(auth.body.id), (events) => events.length === 2, 8000);
  t.match(history[1], { action: 'void', actor: { type: 'system', name: 'expire_authorization' }, request_id: null, changes: { status: ['authorized', 'voided'] } });
});

t.test('filters, q and tenancy', async (t) => {
  const updates = await api.request('GET', '/audit_events?actor[type]=secret_key&q=action == "update"');
  t.equal(updates.status, 200, JSON.stringify(updates.body));
  t.ok(updates.body.values.length >= 1);
  t.ok(updates.body.values.every((e: any) => e.action === 'update' && e.actor.type === 'secret_key'));
  const ours = new Set((await api.request('GET', '/audit_events?limit=1000')).body.values.map((e: any) => e.id));
  t.ok(ours.size > 10);
  for (const [org, env] of [['other-org', 'test'], ['acme', 'live']] as const) {
    const key = await api.newKey(org, env);
    const theirs = (await api.request('GET', '/audit_events?limit=1000', { key })).body.values as Array<{ id: string; object_type: string }>;
    t.ok(theirs.length >= 1, `${org} ${env} sees the making of its own key`);
    t.notOk(theirs.some((e) => ours.has(e.id)), `${org} ${env} sees none of acme test's`);
  }
  t.equal((await api.request('POST', '/audit_events', { json: {} })).status, 400, 'read-only');
});

t.test('the table refuses updates, deletes and truncation; retention prunes through its own function', async (t) => {
  await t.rejects(api.db.raw(`update audit_events set data = '{}'`), /append-only/);
  await t.rejects(api.db.raw(`delete from audit_events`), /append-only/);
  await t.rejects(api.db.raw(`truncate audit_events`), /append-only/);
  const there = (await api.db.raw(`select id from audit_events`)).rows.map((r: { id: string }) => r.id);
  t.ok(there.length > 0);
  t.equal((await api.db.raw(`select prune_audit_events(now() - interval '1 day', 100000) as n`)).rows[0].n, 0, 'nothing is old enough');
  // The test API's own work may audit more meanwhile (a key's first use): the prune takes those it sees too. One whose
  // transaction is still open when the prune starts commits after it, and is not among those counted here.
  const pruned = (await api.db.raw(`select prune_audit_events(now() + interval '1 day', 100000) as n`)).rows[0].n;
  t.ok(pruned >= there.length, `every event there was is pruned (${pruned} of at least ${there.length})`);
  t.equal((await api.db.raw(`select count(*)::int as n from audit_events where id = any(?)`, [there])).rows[0].n, 0, 'none of them is left');
  await api.request('POST', '/customers', { json: { name: 'After the prune' } });
  await t.rejects(api.db.raw(`delete from audit_events`), /append-only/, 'the prune leaves no opening behind');
});

t.test('retention deletes audit events past SETTLE_AUDIT_RETENTION (400 days by default) and no others', async (t) => {
  t.equal(loadConfig({}).auditRetentionMs, 400 * 86_400_000);
  const policy = loadConfig({ SETTLE_AUDIT_RETENTION: '30d' });
  await api.db.raw(`insert into audit_events (id, org_id, environment, data, created_at) values
    ('aud_old', 'o', 'test', '{}', now() - interval '31 days'), ('aud_young', 'o', 'test', '{}', now() - interval '29 days')`);
  // The worker of this file may record events meanwhile (an entity's verification): every other event that was there stays.
  const others = (await api.db.raw(`select id from audit_events where id <> 'aud_old'`)).rows.map((r: { id: string }) => r.id);
  const report = await applyRetention(api.db, policy);
  t.equal(report.audit_events, 1);
  t.same((await api.db.raw(`select id from audit_events where id in ('aud_old', 'aud_young')`)).rows, [{ id: 'aud_young' }]);
  const kept = new Set((await api.db.raw(`select id from audit_events`)).rows.map((r: { id: string }) => r.id));
  t.same(others.filter((id: string) => !kept.has(id)), [], 'no other event is deleted');
});
