/**
 * The console's resend actions (CONTRACT §25), in a real browser against the web process, a worker,
 * a webhook receiver and an SMTP server: a webhook's test event and a payment link's e-mail sent
 * again, each behind a confirmation naming the object, each audited as the console, a refusal
 * showing the API's message. A person's keys and clicks only.
 */
import t from 'tap';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { launchBrowser, screenshot } from './helpers/browser.ts';
import { signInToConsole } from './helpers/consoleSession.ts';
import { startReceiver } from './helpers/receiver.ts';
import { startSmtp } from './helpers/smtp.ts';
import { eventually } from './helpers/wait.ts';

const smtp = await startSmtp(t);
const api = await startTestApi(t);
await startTestWorker(t, api.databaseUrl, { SMTP_URL: smtp.url, WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50' });
const browser = await launchBrowser(t);

async function made(path: string, json: unknown): Promise<any> {
  const res = await api.request('POST', path, { json });
  if (res.status !== 200) throw new Error(`${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}

async function auditOf(id: string, action: string): Promise<Array<{ actor: { type: string }; changes: Record<string, unknown> }>> {
  return (await api.request('GET', `/audit_events?object_id=${id}&action=${action}`)).body.values;
}

const views = (page: import('playwright-core').Page) => page.getByRole('navigation', { name: 'Views' });

t.test('Send test event: confirmed naming the webhook, delivered to it alone, its attempt shown, audited as the console', async (t) => {
  const receiver = await startReceiver(t);
  const bystander = await startReceiver(t);
  const webhook = await made('/webhooks', { trigger: 'refund', url: `${receiver.url}/hooks` });
  await made('/webhooks', { trigger: 'refund', url: `${bystander.url}/hooks` });
  const page = await browser.newPage();
  await signInToConsole(page, api.url, api.key);
  await views(page).getByRole('link', { name: 'Webhooks', exact: true }).click();
  await page.getByRole('link', { name: webhook.id }).click();
  await page.getByRole('button', { name: 'Send test event…' }).click();
  const dialog = page.getByRole('dialog');
  t.match(await dialog.textContent(), new RegExp(`Send ${webhook.id} one signed test “refund” event at ${receiver.url}/hooks\\. No other webhook receives it\\.`));
  await dialog.getByRole('button', { name: 'Send test event' }).click();
  const said = page.getByRole('status').filter({ hasText: /Test event evt_\S+: Delivered \(HTTP 200\)/ });
  await said.waitFor();
  await screenshot(page, 'console-webhook-test-event.png');
  const [request] = await receiver.waitFor(1);
  const body = JSON.parse(request.body);
  t.match(body, { test: true, trigger: 'refund', webhook_id: webhook.id, triggered_on: { id: webhook.id, object: 'webhook' } });
  t.match(await said.textContent(), body.event_id, 'the page names the event the receiver got');
  t.equal(bystander.received.length, 0, 'the other webhook of the trigger received nothing');
  await page.getByRole('cell', { name: body.event_id }).first().waitFor();
  const audit = await auditOf(webhook.id, 'send_test_event');
  t.equal(audit.length, 1);
  t.equal(audit[0].actor.type, 'console');
  t.same(audit[0].changes, { event_id: [null, body.event_id] });
  await page.close();
});

t.test('Resend e-mail: confirmed naming the link, amount and address, one more message arrives, audited as the console; a refusal shows the API\'s message', async (t) => {
  const mara = await made('/customers', { name: 'Mara Jade', email: 'mara@example.com' });
  const link = await made('/payment_links', { type: 'one_time', description: 'Ship repairs', amount: 88.4, customer_id: mara.id });
  await eventually(() => smtp.received.filter((m) => m.to.includes('mara@example.com')).length, (n) => n === 1);
  const page = await browser.newPage();
  await signInToConsole(page, api.url, api.key);
  await views(page).getByRole('link', { name: 'Payment links', exact: true }).click();
  await page.getByRole('link', { name: link.id }).click();
  await page.getByRole('button', { name: 'Resend e-mail…' }).click();
  const dialog = page.getByRole('dialog');
  t.match(await dialog.textContent(), `E-mail payment link ${link.id} for 88.40 USD, “Ship repairs”, to mara@example.com again.`);
  await dialog.getByRole('button', { name: 'Resend to mara@example.com' }).click();
  await page.getByText('Queued for mara@example.com (resend 1)').waitFor();
  await screenshot(page, 'console-payment-link-resend.png');
  const messages = await eventually(() => smtp.received.filter((m) => m.to.includes('mara@example.com')), (found) => found.length === 2);
  t.equal(messages.length, 2, 'the first message and the one sent again');
  t.ok(messages[1].raw.includes(link.url), 'with the link');
  const audit = await auditOf(link.id, 'resend_email');
  t.equal(audit.length, 1);
  t.equal(audit[0].actor.type, 'console');

  await api.request('PUT', `/payment_links/${link.id}`, { json: { status: 'inactive' } });
  await page.reload();
  await page.getByRole('button', { name: 'Resend e-mail…' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Resend to mara@example.com' }).click();
  await page.getByRole('alert').filter({ hasText: 'is inactive' }).waitFor();
  t.equal((await auditOf(link.id, 'resend_email')).length, 1, 'nothing more is audited');
  t.equal(smtp.received.filter((m) => m.to.includes('mara@example.com')).length, 2, 'nothing more is sent');
  await page.close();
});

t.test('Resend invoice: confirmed naming the invoice, amount and address, the message arrives with a page to pay it, audited as the console; a paid invoice is refused with the API\'s message', async (t) => {
  const finn = await made('/customers', { name: 'Finn', email: 'finn@example.com' });
  const invoice = await made('/invoices', { customer_id: finn.id, number: 'INV-7', description: 'Stormtrooper armour', due_date: '2026-12-20', items: [{ entry_type: 'charge', amount: 61.25 }] });
  const page = await browser.newPage();
  await signInToConsole(page, api.url, api.key);
  await views(page).getByRole('link', { name: 'Invoices', exact: true }).click();
  await page.getByRole('link', { name: invoice.id }).click();
  await page.getByRole('button', { name: 'Resend invoice…' }).click();
  const dialog = page.getByRole('dialog');
  t.match(await dialog.textContent(), `E-mail invoice INV-7 (${invoice.id}) for 61.25 USD due 2026-12-20, with a page to pay it, to finn@example.com.`);
  await dialog.getByRole('button', { name: 'Send 61.25 USD invoice to finn@example.com' }).click();
  const said = page.getByRole('status').filter({ hasText: 'Queued for finn@example.com (message 1) with payment link' });
  await said.waitFor();
  await screenshot(page, 'console-invoice-resend.png');
  const [message] = await eventually(() => smtp.received.filter((m) => m.to.includes('finn@example.com')), (found) => found.length === 1);
  t.match(message.raw, /^Subject: Your invoice$/m);
  t.match(message.raw, /Invoice INV-7: Stormtrooper armour/);
  const linkId = await said.getByRole('link').textContent();
  t.ok(message.raw.includes(`/pay/${linkId}`), 'the message carries the page of the link the console names');
  const audit = await auditOf(invoice.id, 'resend_email');
  t.equal(audit.length, 1);
  t.equal(audit[0].actor.type, 'console');
  t.same(audit[0].changes.recipient, [null, 'finn@example.com']);

  await made('/transactions', { type: 'payment', amount: 61.25, customer_id: finn.id, payment_method: { type: 'card', card: { card_number: '4242424242424242', expiry: '12/35', card_code: '123' } }, allocations: [{ entry_type: 'payment', invoice_id: invoice.id }] });
  await page.reload();
  await page.getByRole('button', { name: 'Resend invoice…' }).click();
  await page.getByRole('dialog').getByRole('button', { name: /^Send .* invoice to finn@example.com$/ }).click();
  await page.getByRole('alert').filter({ hasText: 'is paid: nothing is due' }).waitFor();
  t.equal((await auditOf(invoice.id, 'resend_email')).length, 1, 'nothing more is audited');
  t.equal(smtp.received.filter((m) => m.to.includes('finn@example.com')).length, 1, 'nothing more is sent');
  await page.close();
});
