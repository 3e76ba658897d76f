/**
 * Link e-mails (CONTRACT §13): a link intent or payment activation with `send_to` e-mails each
 * recipient its link through SMTP (a real SMTP server on loopback here), from the outbox, by the
 * worker, at most once per recipient per link; a refusal before hand-over is retried, a permanent
 * one is not; without SMTP_URL each message is an .eml file under <data dir>/mail/.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { eventually } from './helpers/wait.ts';
import { startSmtp, type Received } from './helpers/smtp.ts';

process.env.SETTLE_PUBLIC_URL = 'https://pay.example.test';
const V2 = { version: 'v2' };

const smtp = await startSmtp(t);
const api = await startTestApi(t);
await startTestWorker(t, api.databaseUrl, { SMTP_URL: smtp.url, SMTP_FROM: 'Shop <shop@example.com>', WEBHOOK_RETRY_SCHEDULE: '100ms,100ms', WORKER_POLL_INTERVAL: '50' });

function messagesTo(address: string): Received[] {
  return smtp.received.filter((m) => m.to.includes(address));
}

t.test('a link intent e-mails each recipient its link once, through SMTP', async (t) => {
  const res = await api.request('POST', '/intents', {
    ...V2,
    json: {
      type: 'payouts_enrollment_link',
      payouts_enrollment_link: { entity_name: 'Jango', purpose: 'Commissions' },
      send_to: [{ name: 'Jango Fett', email: 'jango@example.com' }, { email: 'ops@example.com' }, { email: 'JANGO@example.com' }],
    },
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  await eventually(() => messagesTo('jango@example.com').length > 0 && messagesTo('ops@example.com').length > 0, Boolean);
  const [jango] = messagesTo('jango@example.com');
  t.ok(jango, 'jango got a message');
  t.equal(jango.from, 'shop@example.com');
  t.match(jango.raw, /^From: Shop <shop@example\.com>/m);
  t.match(jango.raw, /^To: Jango Fett <jango@example\.com>/m);
  t.match(jango.raw, /^Subject: Connect your bank account for payouts/m);
  t.match(jango.raw, /Hello Jango Fett,/);
  t.ok(jango.raw.includes(res.body.url), 'the message carries the link');
  t.equal(messagesTo('ops@example.com').length, 1);
  const sent = () => api.db('link_emails').where({ object_id: res.body.id }).orderBy('recipient');
  await eventually(async () => (await sent()).filter((r: any) => r.state === 'sent').length === 2, Boolean);
  const rows = await sent();
  t.same(rows.map((r: any) => [r.recipient, r.state, r.attempts]), [['jango@example.com', 'sent', 1], ['ops@example.com', 'sent', 1]], 'one message per recipient, however it was spelled');
  // Another run of a finished job (a retry, a duplicate enqueue) sends nothing more.
  const again = await api.db.raw(`select id from graphile_worker.add_job('send_link_email', json_build_object('email_id', ?::text, 'org_id', ?::text, 'environment', 'test'))`, [rows[0].id, rows[0].org_id]);
  const jobId = again.rows[0].id;
  // Waits for that job to have run (a finished job leaves the queue), not for a guessed time.
  await eventually(async () => (await api.db.raw('select 1 from graphile_worker.jobs where id = ?', [jobId])).rows.length === 0, Boolean);
  t.equal(messagesTo('jango@example.com').length, 1, 'at most once');
});

t.test('a payment link e-mails its customer once: inline (reused by e-mail) or by customer_id', async (t) => {
  const first = await api.request('POST', '/payment_links', { json: { type: 'one_time', description: 'Concert tickets', amount: 45.5, customer: { name: 'Leia Organa', email: 'leia@example.com' } } });
  t.equal(first.status, 200, JSON.stringify(first.body));
  await eventually(() => messagesTo('leia@example.com').length > 0, Boolean);
  const [leia] = messagesTo('leia@example.com');
  t.ok(leia, 'the customer got a message');
  t.match(leia.raw, /^To: Leia Organa <leia@example\.com>/m);
  t.match(leia.raw, /^Subject: Your payment link/m);
  t.match(leia.raw, /Concert tickets/, 'with the description');
  t.match(leia.raw, /45\.50/, 'the amount');
  t.ok(leia.raw.includes(first.body.url), 'and the link');

  const second = await api.request('POST', '/payment_links', { json: { type: 'reusable', description: 'Parking', customer: { name: 'Leia', email: 'LEIA@example.com' } } });
  t.equal(second.status, 200, JSON.stringify(second.body));
  t.equal(second.body.customer_id, first.body.customer_id, 'the customer of that e-mail is reused, not created again');

  const han = (await api.request('POST', '/customers', { json: { name: 'Han Solo', email: 'han@example.com' } })).body;
  const byId = await api.request('POST', '/payment_links', { version: 'v2', json: { type: 'one_time', description: 'Hyperdrive repair', amount: 1000, payer: { account_id: han.id } } });
  t.equal(byId.status, 200, JSON.stringify(byId.body));
  const silent = (await api.request('POST', '/customers', { json: { name: 'No e-mail' } })).body;
  const none = await api.request('POST', '/payment_links', { json: { type: 'one_time', description: 'Quiet', amount: 1, customer_id: silent.id } });
  t.equal(none.status, 200);
  await eventually(() => messagesTo('han@example.com').length > 0 && messagesTo('leia@example.com').length > 1, Boolean);
  t.equal(messagesTo('han@example.com').length, 1, 'a customer_id whose customer has an e-mail');
  t.equal(messagesTo('leia@example.com').length, 2, 'one message per link');
  t.same(await api.db('link_emails').where({ object_id: none.body.id }), [], 'nothing for a customer without an e-mail');
});

t.test('a payment link\'s e-mail sent again is one more message to its customer, audited; refused without a customer e-mail or for an inactive link', async (t) => {
  const luke = (await api.request('POST', '/customers', { json: { name: 'Luke Skywalker', email: 'luke@example.com' } })).body;
  const link = (await api.request('POST', '/payment_links', { json: { type: 'one_time', description: 'Moisture vaporator', amount: 120, customer_id: luke.id } })).body;
  await eventually(() => messagesTo('luke@example.com').length > 0, Boolean);
  const again = await api.request('POST', `/payment_links/${link.id}/resend_email`);
  t.equal(again.status, 200, JSON.stringify(again.body));
  t.match(again.body, { object: 'payment_link_email', id: /^eml_/, payment_link_id: link.id, recipient: 'luke@example.com', resend: 1 });
  const third = await api.request('POST', `/payment_links/${link.id}/resend_email`);
  t.equal(third.body.resend, 2, 'each resend is a message of its own');
  await eventually(() => messagesTo('luke@example.com').length >= 3, Boolean);
  const received = messagesTo('luke@example.com');
  t.equal(received.length, 3, 'the first message and two resends, each once');
  for (const message of received) {
    t.match(message.raw, /Moisture vaporator/);
    t.ok(message.raw.includes(link.url), 'each with the link');
  }
  t.same(received.map((m) => /^X-Settle-Email-Id: (\S+)/im.exec(m.raw)?.[1]).slice(1).sort(), [again.body.id, third.body.id].sort(), 'the resends are the messages answered');
  const audit = (await api.request('GET', `/audit_events?object_id=${link.id}&action=resend_email`)).body.values;
  t.equal(audit.length, 2);
  t.match(audit[0], { action: 'resend_email', object_type: 'payment_link', actor: { type: 'secret_key' }, changes: { recipient: [null, 'luke@example.com'] } });

  const silent = (await api.request('POST', '/customers', { json: { name: 'No e-mail either' } })).body;
  const quiet = (await api.request('POST', '/payment_links', { json: { type: 'one_time', description: 'Quiet', amount: 1, customer_id: silent.id } })).body;
  const noAddress = await api.request('POST', `/payment_links/${quiet.id}/resend_email`);
  t.equal(noAddress.status, 409);
  t.match(JSON.stringify(noAddress.body), /no customer with an e-mail/);
  await api.request('PUT', `/payment_links/${link.id}`, { json: { status: 'inactive' } });
  const inactive = await api.request('POST', `/payment_links/${link.id}/resend_email`);
  t.equal(inactive.status, 409);
  t.match(JSON.stringify(inactive.body), /is inactive/);
  t.equal((await api.request('POST', '/payment_links/pl_nope/resend_email')).status, 404);
  t.equal((await api.request('POST', `/payment_links/${quiet.id}/resend_email`, { json: { to: 'x@example.com' } })).status, 400, 'no address can be chosen');
  t.equal((await api.request('GET', `/audit_events?object_id=${link.id}&action=resend_email`)).body.values.length, 2, 'a refused resend is not audited');
});

t.test('an invoice is e-mailed to its customer only when asked: its number, balance, due date and a page to pay it at; audited; refused with nothing due or no address', async (t) => {
  const rey = (await api.request('POST', '/customers', { json: { name: 'Rey', email: 'rey@example.com' } })).body;
  const invoice = (await api.request('POST', '/invoices', { json: { customer_id: rey.id, number: 'INV-0042', description: 'Speeder parts', due_date: '2026-12-15', items: [{ entry_type: 'charge', amount: 45.67 }] } })).body;
  t.equal(invoice.status, 'unpaid', JSON.stringify(invoice));
  const sent = await api.request('POST', `/invoices/${invoice.id}/resend_email`);
  t.equal(sent.status, 200, JSON.stringify(sent.body));
  t.match(sent.body, { object: 'invoice_email', id: /^eml_/, invoice_id: invoice.id, recipient: 'rey@example.com', resend: 0, payment_link_id: /^pay_/ });
  t.equal(sent.body.url, `https://pay.example.test/pay/${sent.body.payment_link_id}`);
  const link = (await api.request('GET', `/payment_links/${sent.body.payment_link_id}`)).body;
  t.match(link, { invoice_id: invoice.id, amount: 45.67, status: 'active', customer_id: rey.id }, 'the page asks for the invoice\'s balance');
  await eventually(() => messagesTo('rey@example.com').length > 0, Boolean);
  const [message] = messagesTo('rey@example.com');
  t.match(message.raw, /^Subject: Your invoice$/m);
  t.match(message.raw, /Invoice INV-0042: Speeder parts/);
  t.match(message.raw, /Amount due: 45\.67, due 2026-12-15\./);
  t.ok(message.raw.includes(sent.body.url), 'with the page to pay it at');
  const again = await api.request('POST', `/invoices/${invoice.id}/resend_email`);
  t.match(again.body, { resend: 1, payment_link_id: sent.body.payment_link_id }, 'the same page again, as a new message');
  await eventually(() => messagesTo('rey@example.com').length >= 2, Boolean);
  t.equal(messagesTo('rey@example.com').length, 2, 'one message each time, and none from the link itself');
  const audit = (await api.request('GET', `/audit_events?object_id=${invoice.id}&action=resend_email`)).body.values;
  t.equal(audit.length, 2);
  t.match(audit[0], { object_type: 'invoice', actor: { type: 'secret_key' }, changes: { recipient: [null, 'rey@example.com'], payment_link_id: [null, sent.body.payment_link_id] } });

  const quietInvoice = (await api.request('POST', '/invoices', { json: { customer_id: rey.id, due_date: '2026-12-15', items: [{ entry_type: 'charge', amount: 3 }] } })).body;
  const draft = (await api.request('POST', '/invoices', { json: { customer_id: rey.id, status: 'draft', due_date: '2026-12-15', items: [{ entry_type: 'charge', amount: 3 }] } })).body;
  const nobody = (await api.request('POST', '/customers', { json: { name: 'No address' } })).body;
  const unaddressed = (await api.request('POST', '/invoices', { json: { customer_id: nobody.id, due_date: '2026-12-15', items: [{ entry_type: 'charge', amount: 3 }] } })).body;
  const refusals = [
    [await api.request('POST', `/invoices/${draft.id}/resend_email`), 409, /is a draft/],
    [await api.request('POST', `/invoices/${unaddressed.id}/resend_email`), 409, /no customer with an e-mail/],
    [await api.request('POST', '/invoices/inv_nope/resend_email'), 404, /No invoice/],
    [await api.request('POST', `/invoices/${invoice.id}/resend_email`, { json: { to: 'x@example.com' } }), 400, /to/],
  ] as const;
  for (const [res, status, said] of refusals) {
    t.equal(res.status, status, JSON.stringify(res.body));
    t.match(JSON.stringify(res.body), said);
  }
  const paid = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 45.67, customer_id: rey.id, payment_method: { type: 'card', card: { card_number: '4242424242424242', expiry: '12/35', card_code: '123' } }, allocations: [{ entry_type: 'payment', invoice_id: invoice.id }] } });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  const afterPaid = await api.request('POST', `/invoices/${invoice.id}/resend_email`);
  t.equal(afterPaid.status, 409);
  t.match(JSON.stringify(afterPaid.body), /is paid/);
  t.equal((await api.request('GET', `/audit_events?object_id=${invoice.id}&action=resend_email`)).body.values.length, 2, 'a refusal is not audited');
  t.same(await api.db('link_emails').whereIn('object_id', [quietInvoice.id, draft.id, unaddressed.id]), [], 'creating an invoice sends nothing');
  t.equal(messagesTo('rey@example.com').length, 2);
});

t.test('a payment activation e-mails its recipients too', async (t) => {
  const res = await api.request('POST', '/payment_activations', { json: { intent: { entity_name: 'Boba' }, send_to: [{ name: 'Boba', email: 'boba@example.com' }] } });
  t.equal(res.status, 200, JSON.stringify(res.body));
  await eventually(() => messagesTo('boba@example.com').length > 0, Boolean);
  const [boba] = messagesTo('boba@example.com');
  t.match(boba?.raw, /^Subject: Connect your bank account$/m);
  t.ok(boba?.raw.includes(`https://pay.example.test/enroll/${res.body.id}`));
});

t.test('a temporary refusal is retried and delivered once; a permanent one is not retried', async (t) => {
  const res = await api.request('POST', '/intents', {
    ...V2,
    json: { type: 'checkout_link', checkout_link: { amount: 9.5, description: 'Invoice 12' }, send_to: [{ email: 'busy@example.com' }, { email: 'nobody@example.com' }] },
  });
  t.equal(res.status, 200, JSON.stringify(res.body));
  const states = async () => Object.fromEntries((await api.db('link_emails').where({ object_id: res.body.id })).map((r: any) => [r.recipient, r]));
  await eventually(async () => {
    const s = await states();
    return s['busy@example.com']?.state === 'sent' && s['nobody@example.com']?.state === 'failed';
  }, Boolean);
  const final = await states();
  t.match(final['busy@example.com'], { state: 'sent', attempts: 2 }, 'sent on the second attempt');
  t.match(final['nobody@example.com'], { state: 'failed', attempts: 1, last_error: /No such user/ }, 'a 550 is final');
  t.equal(messagesTo('busy@example.com').length, 1);
  t.match(messagesTo('busy@example.com')[0].raw, /^Subject: Your payment link/m);
  t.equal(messagesTo('nobody@example.com').length, 0);
});

t.test('nothing is queued for a link that was not created, or that has no recipients', async (t) => {
  const before = Number((await api.db('link_emails').count('* as n'))[0].n);
  const bad = await api.request('POST', '/intents', { ...V2, json: { type: 'checkout_link', checkout_link: { description: 'no amount' }, send_to: [{ email: 'ghost@example.com' }] } });
  t.equal(bad.status, 400);
  const badList = await api.request('POST', '/payment_activations', { json: { object: 'list', values: [{ send_to: [{ email: 'ghost@example.com' }] }, { send_to: [{ email: 'bad' }] }] } });
  t.equal(badList.status, 400, 'one bad item fails the whole list');
  const silent = await api.request('POST', '/intents', { ...V2, json: { type: 'checkout_link', checkout_link: { amount: 1, description: 'quiet' } } });
  t.equal(silent.status, 200);
  t.equal(Number((await api.db('link_emails').count('* as n'))[0].n), before, 'no message row, so nothing to send');
});

t.test('without SMTP_URL each message is an .eml file under <data dir>/mail/', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-mail-'));
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  // One data directory for both, as on one machine: the vault key generated there is theirs.
  const local = await startTestApi(t, { SETTLE_DATA_DIR: dataDir });
  await startTestWorker(t, local.databaseUrl, { SETTLE_DATA_DIR: dataDir, WORKER_POLL_INTERVAL: '50' });
  const res = await local.request('POST', '/intents', { ...V2, json: { type: 'account_enrollment_link', send_to: [{ name: 'Lando', email: 'lando@example.com' }] } });
  t.equal(res.status, 200, JSON.stringify(res.body));
  // Marked sent once the file is written whole: a file seen earlier may still be empty.
  const row = () => local.db('link_emails').where({ object_id: res.body.id }).first();
  await eventually(async () => (await row())?.state === 'sent', Boolean);
  t.equal((await row()).state, 'sent');
  const dir = path.join(dataDir, 'mail');
  const files = fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  t.equal(files.length, 1);
  const eml = fs.readFileSync(path.join(dir, files[0]), 'utf8');
  t.match(eml, /^To: Lando <lando@example\.com>/m);
  t.match(eml, /^Subject: Set up your processing account/m);
  t.ok(eml.includes(`https://pay.example.test/enroll/${res.body.id}`));
});
