/**
 * Payload.Form in a real browser (CONTRACT §16): a merchant page on its own origin loads
 * /client.js, the numbers are typed into Settle's frames, and the outcome is what a user and the
 * merchant see: the stored payment, the hidden inputs posted to the merchant's server, the events,
 * pl-invalid on a bad card. The number is never in the merchant page or its server's request.
 */
import http from 'node:http';
import t from 'tap';
import type { Page } from 'playwright-core';
import { startTestApi } from './helpers/api.ts';
import { clear, launchBrowser, screenshot, startMerchantSite } from './helpers/browser.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t);
const browser = await launchBrowser(t);
const site = await startMerchantSite(t);
await api.request('POST', '/processing_accounts', { json: { name: 'Shop' } });
const customer = (await api.request('POST', '/customers', { json: { name: 'Ann Buyer' } })).body;

async function clientToken(intent: Record<string, unknown>): Promise<string> {
  const res = await api.request('POST', '/access_tokens', { json: { type: 'client', intent } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

const EVENTS = ['processing', 'processed', 'authorized', 'declined', 'error', 'created', 'success', 'invalid', 'valid', 'focus', 'blur', 'change'];

/** A merchant page: the form, Settle's script, and a recorder of every event the form fires. */
function merchantPage(token: string, form: string, options = '{}'): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Shop</title>
<style>[pl-input] { border: 1px solid #999; height: 32px; } .pl-invalid { border-color: red; }</style></head>
<body>
${form}
<script src="${api.url}/client.js"></script>
<script>
  Payload(${JSON.stringify(token)});
  window.seen = [];
  window.plForm = new Payload.Form(Object.assign({ form: document.querySelector('form') }, ${options}));
  ${JSON.stringify(EVENTS)}.forEach(function (name) {
    plForm.on(name, function (e) {
      var record = { type: e.type, transaction_id: e.transaction_id, payment_method_id: e.payment_method_id, details: e.details,
        error_type: e.error_type, status_code: e.status_code, target: e.target && e.target.getAttribute ? e.target.getAttribute('pl-input') : undefined };
      seen.push(record);
      if (window.reportEvent) window.reportEvent(record);
    });
  });
</script>
</body></html>`;
}

interface Seen {
  type: string;
  transaction_id?: string;
  payment_method_id?: string;
  details?: Record<string, unknown>;
  error_type?: string;
  status_code?: string;
  target?: string;
}

async function openMerchant(path: string, html: string): Promise<{ page: Page; events: Seen[] }> {
  site.pages.set(path, html);
  const page = await browser.newPage();
  const events: Seen[] = [];
  await page.exposeFunction('reportEvent', (e: Seen) => {
    if (process.env.BROWSER_DEBUG) console.error('event:', JSON.stringify(e));
    events.push(e);
  });
  if (process.env.BROWSER_DEBUG) {
    page.on('console', (m) => console.error('console:', m.text()));
    page.on('pageerror', (e) => console.error('pageerror:', e.message));
    page.on('requestfailed', (r) => console.error('requestfailed:', r.url(), r.failure()?.errorText));
    page.on('response', (r) => console.error('response:', r.status(), r.url()));
  }
  await page.goto(site.url + path);
  return { page, events };
}

function secureInput(page: Page, field: string) {
  return page.frameLocator(`[pl-input=${field}] iframe`).locator('input');
}

/** Everything the merchant page's own document holds: markup and every input's value. */
async function merchantDom(page: Page): Promise<string> {
  const values = await page.locator('input').evaluateAll((inputs) => inputs.map((i) => (i as unknown as { value: string }).value));
  return `${await page.content()}|${values.join('|')}`;
}

interface PageWindow {
  plForm: { submit: () => Promise<unknown> };
  seen: Seen[];
}

/** `.submit()` from the page: null on success, else the rejection's data. */
function submitFromPage(page: Page): Promise<any> {
  return page.evaluate(() => (globalThis as unknown as PageWindow).plForm.submit().then(() => null, (e: { data: unknown }) => e.data));
}

function seenByPage(page: Page): Promise<Seen[]> {
  return page.evaluate(() => (globalThis as unknown as PageWindow).seen);
}

async function hasClass(page: Page, field: string, name: string): Promise<boolean> {
  return (await page.locator(`[pl-input=${field}].${name}`).count()) === 1;
}

function failureOf(events: Seen[]): string | null {
  const error = events.find((e) => e.type === 'error');
  return error ? `the form reported ${JSON.stringify(error)}` : null;
}

async function until(condition: () => boolean, what: string, ms = 10_000): Promise<void> {
  if (!(await eventually(condition, Boolean, ms, 20))) throw new Error(`timed out waiting for ${what}`);
}

t.test('GET /client.js is public, cacheable by content hash; the frames carry a strict CSP', async (t) => {
  const script = await fetch(`${api.url}/client.js`);
  t.equal(script.status, 200);
  t.match(script.headers.get('content-type'), /javascript/);
  t.match(script.headers.get('cache-control'), /public/);
  const etag = script.headers.get('etag');
  t.ok(etag);
  t.match(await script.text(), /window\.Payload = Payload/);
  // node:http, as fetch marks a conditional request no-cache (which must be answered in full)
  const again = await new Promise<number>((resolve, reject) => {
    http.get(`${api.url}/client.js`, { headers: { 'If-None-Match': etag! } }, (res) => resolve(res.resume().statusCode ?? 0)).on('error', reject);
  });
  t.equal(again, 304, 'revalidates by content hash');
  const frame = await fetch(`${api.url}/elements/input`);
  const csp = frame.headers.get('content-security-policy') ?? '';
  t.match(csp, /default-src 'none'/);
  t.match(csp, /script-src 'self'/);
  t.notMatch(csp, /unsafe-inline|unsafe-eval/);
});

t.test('a payment form pays with the card typed into Settle frames; the merchant page and server never see the number', async (t) => {
  const token = await clientToken({ payment_form: { payment: { amount: 12.34, description: 'Order A-1' } } });
  const { page, events } = await openMerchant('/pay-a', merchantPage(token, `
<form pl-form="payment" action="/done-a" method="post">
  <input name="order" value="A-1">
  <label for="card-number">Card number</label><div id="card-number" pl-input="card_number"></div>
  <div pl-input="expiry"></div>
  <div pl-input="card_code"></div>
  <input pl-input="account_holder" value="Ann Buyer">
  <button id="pay">Pay</button>
</form>`));
  await secureInput(page, 'card_number').pressSequentially('4242 4242 4242 4242');
  await secureInput(page, 'expiry').pressSequentially('12/35');
  await secureInput(page, 'card_code').pressSequentially('123');
  t.equal(await secureInput(page, 'card_number').getAttribute('autocomplete'), 'cc-number');
  t.notMatch(await merchantDom(page), /4242/, 'the number is not in the merchant page');
  await screenshot(page, 'payment-form.png');
  t.ok(await page.locator('[pl-input=card_number] iframe').evaluate((frame) => {
    try {
      return (frame as unknown as { contentDocument: unknown }).contentDocument === null;
    } catch {
      return true;
    }
  }), 'the merchant page cannot reach into the frame');

  await page.evaluate(() => {
    (globalThis as unknown as { plForm: { params: { payment: Record<string, string> } } }).plForm.params.payment.order_number = 'A-1';
  });
  const posted = site.waitForPost('/done-a', () => failureOf(events));
  await page.click('#pay');
  const post = await posted;
  await page.waitForURL(`${site.url}/done-a`);
  const id = post.form.get('pl_transaction_id') ?? '';
  t.match(id, /^txn_/, 'the form was submitted with the hidden pl_transaction_id');
  t.equal(post.form.get('order'), 'A-1', 'with the page\'s own fields');
  t.notMatch(post.body, /4242/, 'the merchant server never receives the number');

  const stored = await api.request('GET', `/transactions/${id}`);
  t.equal(stored.status, 200);
  t.equal(stored.body.amount, 12.34);
  t.equal(stored.body.status, 'processed');
  t.equal(stored.body.description, 'Order A-1');
  t.equal(stored.body.order_number, 'A-1', '.params changed before the submit are sent');
  await until(() => events.some((e) => e.type === 'success'), 'the success event');
  const flow = events.filter((e) => ['processing', 'processed', 'success'].includes(e.type));
  t.same(flow.map((e) => e.type), ['processing', 'processed', 'success']);
  t.equal(flow[1].transaction_id, id);
  t.equal(flow[2].transaction_id, id);
  t.ok(events.some((e) => e.type === 'focus' && e.target === 'card_number'), 'input events name their pl-input');
  await page.close();
});

t.test('a bad card number marks its input pl-invalid with a bracket-path error; a declined card fires declined', async (t) => {
  const token = await clientToken({ payment_form: { payment: { amount: 5 } } });
  const { page } = await openMerchant('/pay-b', merchantPage(token, `
<form pl-form="payment" action="/done-b" method="post">
  <div pl-input="card_number"></div><div pl-input="expiry"></div><div pl-input="card_code"></div>
</form>`, '{ autosubmit: false }'));
  await secureInput(page, 'card_number').pressSequentially('4242 4242 4242 4241');
  await secureInput(page, 'expiry').pressSequentially('12/35');
  await secureInput(page, 'card_code').pressSequentially('123');
  const failure = await submitFromPage(page);
  t.equal(failure.error_type, 'InvalidAttributes');
  t.same(failure.details, { 'payment_method[card][card_number]': 'This card number is not valid: check each digit' });
  t.ok(await hasClass(page, 'card_number', 'pl-invalid'), 'pl-invalid on the card number');
  t.notOk(await hasClass(page, 'expiry', 'pl-invalid'), 'not on the good expiry');
  const seen = await seenByPage(page);
  t.ok(seen.some((e) => e.type === 'error' && e.details?.['payment_method[card][card_number]']), 'error event with the bracket path');

  // The sandbox declines 4111 1111 1111 9903 (general_decline): the page hears `declined`.
  await clear(secureInput(page, 'card_number'));
  await secureInput(page, 'card_number').pressSequentially('4111 1111 1111 9903');
  await page.locator('[pl-input=card_number]:not(.pl-invalid)').waitFor();
  const declined = await submitFromPage(page);
  t.equal(declined.error_type, 'TransactionDeclined');
  const event = (await seenByPage(page)).find((e) => e.type === 'declined');
  t.ok(event, 'declined event');
  t.equal(event?.status_code, 'general_decline');
  const stored = await api.request('GET', `/transactions/${event?.transaction_id}`);
  t.equal(stored.body.status, 'declined');
  t.equal(site.posted.filter((p) => p.path === '/done-b').length, 0, 'autosubmit off: the form was not posted');
  await page.close();
});

t.test('the combined card input pays, and .submit() resolves with the transaction when autosubmit is off', async (t) => {
  const token = await clientToken({ payment_form: { payment: { amount: 7.5 } } });
  const { page } = await openMerchant('/pay-d', merchantPage(token, `
<form pl-form="payment" action="/done-d" method="post"><div pl-input="card"></div></form>`, '{ autosubmit: false }'));
  const card = page.frameLocator('[pl-input=card] iframe');
  await card.getByLabel('Card number').pressSequentially('4242424242424242');
  await card.getByLabel('Expiration date').pressSequentially('12/35');
  await card.getByLabel('Security code').pressSequentially('123');
  const result = await page.evaluate(() => (globalThis as unknown as PageWindow).plForm.submit()) as { transaction_id: string; status: string };
  t.match(result.transaction_id, /^txn_/);
  t.equal(result.status, 'processed');
  t.equal((await api.request('GET', `/transactions/${result.transaction_id}`)).body.amount, 7.5);
  t.equal(await page.locator('input[name=pl_transaction_id]').count(), 0, 'no hidden input and no post without autosubmit');
  t.notMatch(await merchantDom(page), /4242/);
  await page.close();
});

t.test('a payment-method form saves a bank account to the token\'s customer and posts pl_payment_method_id', async (t) => {
  const token = await clientToken({ payment_method_form: { payment_method: { customer_id: customer.id } } });
  const { page, events } = await openMerchant('/save-c', merchantPage(token, `
<form pl-form="payment_method" action="/done-c" method="post">
  <input pl-input="account_holder" value="Ann Buyer">
  <div pl-input="routing_number"></div>
  <div pl-input="account_number"></div>
  <select pl-input="account_type"><option>checking</option><option selected>savings</option></select>
</form>`));
  await secureInput(page, 'routing_number').pressSequentially('021000021');
  await secureInput(page, 'account_number').pressSequentially('987654321');
  const posted = site.waitForPost('/done-c', () => failureOf(events));
  await secureInput(page, 'account_number').press('Enter');
  const post = await posted;
  await page.waitForURL(`${site.url}/done-c`);
  const id = post.form.get('pl_payment_method_id') ?? '';
  t.match(id, /^pm_/);
  t.notMatch(post.body, /987654321/);
  const method = await api.request('GET', `/payment_methods/${id}`);
  t.equal(method.body.type, 'bank_account');
  t.equal(method.body.customer_id, customer.id);
  t.equal(method.body.account_holder, 'Ann Buyer');
  t.equal(method.body.bank_account.account_type, 'savings');
  t.notMatch(JSON.stringify(method.body), /987654321/);
  await until(() => events.some((e) => e.type === 'success'), 'the success event');
  t.equal(events.find((e) => e.type === 'created')?.payment_method_id, id);
  await page.close();
});

t.test('Payload.Checkout opens Settle\'s checkout in a modal, pays, and posts pl_transaction_id to the merchant', async (t) => {
  const token = await clientToken({ checkout_plugin: { amount: 20, description: 'Gift card' } });
  const { page, events } = await openMerchant('/checkout-e', `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body>
<form action="/done-e" method="post"><input name="order" value="E-5"></form>
<script src="${api.url}/client.js"></script>
<script>
  Payload(${JSON.stringify(token)});
  var checkout = new Payload.Checkout({ form: document.querySelector('form') });
  ['loaded', 'processed', 'authorized', 'declined', 'success', 'closed'].forEach(function (name) {
    checkout.on(name, function (e) { reportEvent({ type: e.type, transaction_id: e.transaction_id }); });
  });
</script>
</body></html>`);
  await until(() => events.some((e) => e.type === 'loaded'), 'the loaded event');
  t.equal(await page.getByRole('dialog', { name: 'Checkout' }).count(), 1, 'a modal dialog without a container');
  const frame = page.frameLocator('iframe[title=Checkout]');
  t.match(await frame.locator('main').textContent(), /Gift card/);
  await frame.getByLabel('Card number').pressSequentially('4242 4242 4242 4242');
  await frame.getByLabel('Expiration date (MM/YY)').pressSequentially('12/35');
  await frame.getByLabel('Security code').pressSequentially('123');
  t.notMatch(await merchantDom(page), /4242/);
  const posted = site.waitForPost('/done-e', () => (events.some((e) => e.type === 'declined') ? 'declined' : null));
  await frame.getByRole('button', { name: 'Pay 20.00' }).click();
  const post = await posted;
  await page.waitForURL(`${site.url}/done-e`);
  const id = post.form.get('pl_transaction_id') ?? '';
  t.match(id, /^txn_/);
  t.equal(post.form.get('order'), 'E-5');
  t.equal((await api.request('GET', `/transactions/${id}`)).body.amount, 20);
  await until(() => events.some((e) => e.type === 'success'), 'the success event');
  t.same(events.filter((e) => e.type !== 'loaded').map((e) => [e.type, e.transaction_id]), [['processed', id], ['success', id]]);
  await page.close();
});
