/**
 * Card and bank numbers as people enter them, in a real browser: each way of writing an expiry and
 * a card number, typed key by key, pasted through the clipboard or autofilled, on every surface
 * that takes a card (the secure-input frames of a payment form and a payment-method form, the
 * hosted checkout page, a payment link's page, the checkout plugin), each to a processed payment or
 * a stored method. Then the edits people make: Backspace over the "/" the field added, a digit
 * fixed in the middle of a number, errors told in words once the person leaves the field, bank
 * numbers pasted with spaces.
 */
import t, { type Test } from 'tap';
import type { FrameLocator, Locator, Page } from 'playwright-core';
import { startTestApi } from './helpers/api.ts';
import { clear, enter, launchBrowser, startMerchantSite, type Entry } from './helpers/browser.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t);
const browser = await launchBrowser(t);
const site = await startMerchantSite(t);
await api.request('POST', '/processing_accounts', { json: { name: 'Shop' } });
const customer = (await api.request('POST', '/customers', { json: { name: 'Ann Buyer' } })).body;

interface Variant {
  card: string;
  cardBy: Entry;
  expiry: string;
  expiryBy: Entry;
  /** what the expiry field shows once entered */
  shows: string;
  /** what the stored method's expiry is */
  stored: string;
}

const VARIANTS: Variant[] = [
  { card: '4242424242424242', cardBy: 'type', expiry: '1235', expiryBy: 'type', shows: '12/35', stored: '12/35' },
  { card: '4242 4242 4242 4242', cardBy: 'type', expiry: '12/35', expiryBy: 'type', shows: '12/35', stored: '12/35' },
  { card: '4242-4242-4242-4242', cardBy: 'paste', expiry: '12 / 35', expiryBy: 'type', shows: '12/35', stored: '12/35' },
  { card: '4242 - 4242 - 4242 - 4242', cardBy: 'paste', expiry: '12/2035', expiryBy: 'paste', shows: '12/2035', stored: '12/35' },
  { card: '4242424242424242', cardBy: 'autofill', expiry: '1/35', expiryBy: 'type', shows: '01/35', stored: '01/35' },
  { card: '4242 4242 4242 4242', cardBy: 'autofill', expiry: '12/2035', expiryBy: 'autofill', shows: '12/2035', stored: '12/35' },
];

function describe(v: Variant): string {
  return `card "${v.card}" (${v.cardBy}), expiry "${v.expiry}" (${v.expiryBy})`;
}

async function clientToken(intent: Record<string, unknown>): Promise<string> {
  const res = await api.request('POST', '/access_tokens', { json: { type: 'client', intent } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

/** A merchant page with Payload.Form; `window.outcome` records the form's last result event. */
function formPage(token: string, form: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Shop</title>
<style>[pl-input] { border: 1px solid #999; height: 32px; }</style></head>
<body>
${form}
<button id="go" type="button">Pay</button>
<p id="outcome"></p>
<script src="${api.url}/client.js"></script>
<script>
  Payload(${JSON.stringify(token)});
  var plForm = new Payload.Form({ form: document.querySelector('form'), autosubmit: false });
  document.getElementById('go').addEventListener('click', function () {
    plForm.submit().then(function (result) {
      document.getElementById('outcome').textContent = 'done ' + (result.transaction_id || result.payment_method_id || result.id);
    }, function (error) {
      document.getElementById('outcome').textContent = 'failed ' + JSON.stringify(error.data);
    });
  });
</script>
</body></html>`;
}

let pages = 0;
async function openMerchant(html: string): Promise<Page> {
  const path = `/shop-${++pages}`;
  site.pages.set(path, html);
  const page = await browser.newPage();
  await page.goto(site.url + path);
  return page;
}

/** Submits the merchant form and answers the created id, or fails with what the form reported. */
async function submitForm(page: Page): Promise<string> {
  await page.getByRole('button', { name: 'Pay' }).click();
  const outcome = page.locator('#outcome');
  await outcome.filter({ hasText: /^(done|failed) / }).waitFor();
  const text = (await outcome.textContent()) ?? '';
  if (!text.startsWith('done ')) throw new Error(text);
  return text.slice(5);
}

/** Enters a variant's card into three inputs, checking what each shows. */
async function enterCard(t: Test, page: Page, inputs: { number: Locator; expiry: Locator; code: Locator }, v: Variant): Promise<void> {
  await enter(page, inputs.number, v.card, v.cardBy);
  await enter(page, inputs.expiry, v.expiry, v.expiryBy);
  await enter(page, inputs.code, '123', 'type');
  t.equal(await inputs.number.inputValue(), '4242 4242 4242 4242', 'the number shows in groups of four');
  t.equal(await inputs.expiry.inputValue(), v.shows, 'the expiry shows as MM/YY');
}

async function expectPayment(t: Test, id: string, amount: number, expiry: string): Promise<void> {
  t.match(id, /^txn_/);
  const stored = await api.request('GET', `/transactions/${id}`);
  t.equal(stored.body.status, 'processed');
  t.equal(stored.body.amount, amount);
  const method = await api.request('GET', `/payment_methods/${stored.body.payment_method_id}`);
  t.equal(method.body.card.card_number, 'xxxxxxxxxxxx4242');
  t.equal(method.body.card.expiry, expiry, 'the stored expiry is the one the person meant');
}

function secureInput(page: Page, field: string): Locator {
  return page.frameLocator(`[pl-input=${field}] iframe`).locator('input');
}

function hostedInputs(frame: Page | FrameLocator) {
  return { number: frame.getByLabel('Card number'), expiry: frame.getByLabel('Expiration date (MM/YY)'), code: frame.getByLabel('Security code') };
}

t.test('every way of entering a card pays, on every surface that takes one', async (t) => {
  const link = (await api.request('POST', '/payment_links', { json: { type: 'reusable', description: 'Tickets', amount: 8 } })).body;
  for (const v of VARIANTS) {
    await t.test(`payment form frames: ${describe(v)}`, async (t) => {
      const page = await openMerchant(formPage(await clientToken({ payment_form: { payment: { amount: 12.34 } } }), `
<form pl-form="payment"><div pl-input="card_number"></div><div pl-input="expiry"></div><div pl-input="card_code"></div></form>`));
      await enterCard(t, page, { number: secureInput(page, 'card_number'), expiry: secureInput(page, 'expiry'), code: secureInput(page, 'card_code') }, v);
      await expectPayment(t, await submitForm(page), 12.34, v.stored);
      await page.close();
    });

    await t.test(`payment-method form, the combined card frame: ${describe(v)}`, async (t) => {
      const page = await openMerchant(formPage(await clientToken({ payment_method_form: { payment_method: { customer_id: customer.id } } }), `
<form pl-form="payment_method"><div pl-input="card"></div></form>`));
      const card = page.frameLocator('[pl-input=card] iframe');
      await enterCard(t, page, { number: card.getByLabel('Card number'), expiry: card.getByLabel('Expiration date'), code: card.getByLabel('Security code') }, v);
      const id = await submitForm(page);
      t.match(id, /^pm_/);
      const method = await api.request('GET', `/payment_methods/${id}`);
      t.equal(method.body.customer_id, customer.id);
      t.equal(method.body.card.expiry, v.stored);
      await page.close();
    });

    await t.test(`hosted checkout page: ${describe(v)}`, async (t) => {
      const token = await clientToken({ checkout_page: { payment: { amount: 45.67, description: 'Blue mug' } } });
      const page = await browser.newPage();
      await page.setViewportSize({ width: 375, height: 740 });
      await page.goto(`${api.url}/checkout/${token}`);
      await enterCard(t, page, hostedInputs(page), v);
      await page.getByRole('button', { name: 'Pay 45.67' }).click();
      await page.getByRole('heading', { name: 'Payment complete' }).waitFor();
      await expectPayment(t, (await page.locator('#reference').textContent()) ?? '', 45.67, v.stored);
      await page.close();
    });

    await t.test(`payment link page: ${describe(v)}`, async (t) => {
      const page = await browser.newPage();
      await page.goto(api.url + new URL(link.url).pathname);
      await enterCard(t, page, hostedInputs(page), v);
      await page.getByRole('button', { name: 'Pay 8.00' }).click();
      await page.getByRole('heading', { name: 'Payment complete' }).waitFor();
      await expectPayment(t, (await page.locator('#reference').textContent()) ?? '', 8, v.stored);
      await page.close();
    });

    await t.test(`checkout plugin: ${describe(v)}`, async (t) => {
      const token = await clientToken({ checkout_plugin: { amount: 20, description: 'Gift card' } });
      const page = await openMerchant(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body>
<p id="outcome"></p>
<script src="${api.url}/client.js"></script>
<script>
  Payload(${JSON.stringify(token)});
  new Payload.Checkout({}).on('processed', function (e) { document.getElementById('outcome').textContent = 'done ' + e.transaction_id; });
</script></body></html>`);
      const frame = page.frameLocator('iframe[title=Checkout]');
      await enterCard(t, page, hostedInputs(frame), v);
      await frame.getByRole('button', { name: 'Pay 20.00' }).click();
      const outcome = page.locator('#outcome');
      await outcome.filter({ hasText: /^done / }).waitFor();
      await expectPayment(t, ((await outcome.textContent()) ?? '').slice(5), 20, v.stored);
      await page.close();
    });
  }
});

t.test('split month and year inputs take the browser\'s cc-exp-month and cc-exp-year autofill', async (t) => {
  const page = await openMerchant(formPage(await clientToken({ payment_form: { payment: { amount: 3 } } }), `
<form pl-form="payment"><div pl-input="card_number"></div><div pl-input="expiry_month"></div><div pl-input="expiry_year"></div><div pl-input="card_code"></div></form>`));
  t.equal(await secureInput(page, 'expiry_month').getAttribute('autocomplete'), 'cc-exp-month');
  t.equal(await secureInput(page, 'expiry_year').getAttribute('autocomplete'), 'cc-exp-year');
  await enter(page, secureInput(page, 'card_number'), '4242424242424242', 'autofill');
  await enter(page, secureInput(page, 'expiry_month'), '3', 'autofill');
  await enter(page, secureInput(page, 'expiry_year'), '2036', 'autofill');
  await enter(page, secureInput(page, 'card_code'), '123', 'autofill');
  await expectPayment(t, await submitForm(page), 3, '03/36');
  await page.close();
});

t.test('Backspace over the "/" the expiry added deletes the digit before it', async (t) => {
  const token = await clientToken({ checkout_page: { payment: { amount: 5, description: 'Stickers' } } });
  const page = await browser.newPage();
  await page.goto(`${api.url}/checkout/${token}`);
  const hosted = page.getByLabel('Expiration date (MM/YY)');
  const framePage = await openMerchant(formPage(await clientToken({ payment_form: { payment: { amount: 5 } } }), '<form pl-form="payment"><div pl-input="expiry"></div></form>'));
  for (const [where, expiry] of [['hosted page', hosted], ['secure frame', secureInput(framePage, 'expiry')]] as const) {
    await expiry.click();
    await expiry.pressSequentially('12');
    t.equal(await expiry.inputValue(), '12/', `${where}: the "/" appears after the month`);
    await expiry.press('Backspace');
    t.equal(await expiry.inputValue(), '1', `${where}: Backspace removes the "/" and the 2`);
    await expiry.pressSequentially('1');
    t.equal(await expiry.inputValue(), '11/', `${where}: typing again adds the "/" again`);
    await expiry.pressSequentially('/');
    t.equal(await expiry.inputValue(), '11/', `${where}: a typed "/" after the added one is not doubled`);
    await expiry.pressSequentially('35');
    await expiry.press('ArrowLeft');
    await expiry.press('ArrowLeft');
    await expiry.press('Backspace');
    t.equal(await expiry.inputValue(), '1/35', `${where}: Backspace just after the "/" in the middle deletes the month digit, keeping the year`);
    await expiry.pressSequentially('2');
    t.equal(await expiry.inputValue(), '12/35', `${where}: and the month can be typed again`);
  }
  await page.close();
  await framePage.close();
});

t.test('a digit fixed in the middle of a card number keeps the caret where the person is typing', async (t) => {
  const token = await clientToken({ checkout_page: { payment: { amount: 6, description: 'Stickers' } } });
  const page = await browser.newPage();
  await page.goto(`${api.url}/checkout/${token}`);
  const number = page.getByLabel('Card number');
  await number.click();
  await number.pressSequentially('4242 4242 4242 4342');
  t.equal(await number.inputValue(), '4242 4242 4242 4342');
  await number.press('End');
  await number.press('ArrowLeft');
  await number.press('ArrowLeft');
  await number.press('Backspace');
  t.equal(await number.inputValue(), '4242 4242 4242 442');
  await number.pressSequentially('2');
  t.equal(await number.inputValue(), '4242 4242 4242 4242', 'the digit goes where the caret was');
  await clear(number);
  await number.pressSequentially('424242424242424');
  await number.press('Home');
  for (let i = 0; i < 5; i++) await number.press('ArrowRight');
  await number.press('Backspace');
  t.equal(await number.inputValue(), '4244 2424 2424 24', 'Backspace after a space the field added deletes the digit before it');
  await number.pressSequentially('2');
  await number.press('End');
  await number.pressSequentially('2');
  t.equal(await number.inputValue(), '4242 4242 4242 4242', 'typing resumes at the caret, not at the end');
  await enter(page, page.getByLabel('Expiration date (MM/YY)'), '1235');
  await enter(page, page.getByLabel('Security code'), '123');
  await page.getByRole('button', { name: 'Pay 6.00' }).click();
  await page.getByRole('heading', { name: 'Payment complete' }).waitFor();
  await expectPayment(t, (await page.locator('#reference').textContent()) ?? '', 6, '12/35');
  await page.close();
});

t.test('a mistake is told in words beside the field once the person leaves it, not while typing', async (t) => {
  const token = await clientToken({ checkout_page: { payment: { amount: 7, description: 'Stickers' } } });
  const page = await browser.newPage();
  await page.goto(`${api.url}/checkout/${token}`);
  const number = page.getByLabel('Card number');
  const error = page.locator('#card_number-error');
  await number.click();
  await number.pressSequentially('4242 4242 4242 4241');
  t.notOk(await error.isVisible(), 'no error while typing');
  await number.press('Tab');
  await error.waitFor({ state: 'visible' });
  t.equal(await error.textContent(), 'This card number is not valid: check each digit');
  t.equal(await number.getAttribute('aria-invalid'), 'true');
  await number.click();
  await number.press('Backspace');
  await error.waitFor({ state: 'hidden' });
  await number.pressSequentially('2');
  await enter(page, page.getByLabel('Expiration date (MM/YY)'), '0120');
  await page.getByLabel('Security code').click();
  const expiryError = page.locator('#expiry-error');
  await expiryError.waitFor({ state: 'visible' });
  t.equal(await expiryError.textContent(), 'This card has expired');
  await page.getByRole('button', { name: 'Pay 7.00' }).click();
  const codeError = page.locator('#card_code-error');
  await codeError.waitFor({ state: 'visible' });
  t.equal(await codeError.textContent(), 'Required', 'pressing Pay tells every field that is missing');
  t.equal(await expiryError.textContent(), 'This card has expired');
  t.equal((await api.request('GET', '/transactions?limit=100')).body.values.filter((x: { amount: number }) => x.amount === 7).length, 0, 'nothing was paid');
  await page.close();
});

t.test('routing and account numbers pasted with spaces are taken as their digits', async (t) => {
  await t.test('secure frames of a payment-method form', async (t) => {
    const page = await openMerchant(formPage(await clientToken({ payment_method_form: { payment_method: { customer_id: customer.id } } }), `
<form pl-form="payment_method"><div pl-input="routing_number"></div><div pl-input="account_number"></div></form>`));
    await enter(page, secureInput(page, 'routing_number'), '021 000 021', 'paste');
    await enter(page, secureInput(page, 'account_number'), '9876 5432 1', 'paste');
    t.equal(await secureInput(page, 'routing_number').inputValue(), '021000021');
    const id = await submitForm(page);
    const method = await api.request('GET', `/payment_methods/${id}`);
    t.equal(method.body.bank_account.routing_number, '021000021');
    t.equal(method.body.bank_account.account_number, 'xxxxx4321');
    await page.close();
  });

  await t.test('hosted checkout page, paying by bank account', async (t) => {
    const token = await clientToken({ checkout_page: { payment: { amount: 9, description: 'Stickers' }, card_payments: false, bank_account_payments: true } });
    const page = await browser.newPage();
    await page.goto(`${api.url}/checkout/${token}`);
    await enter(page, page.getByLabel('Routing number'), '021 000 021', 'paste');
    await enter(page, page.getByLabel('Account number'), '1234 5678 9', 'paste');
    await enter(page, page.getByLabel('Account holder name'), 'Ann Buyer');
    await page.getByRole('button', { name: 'Pay 9.00' }).click();
    await page.getByRole('heading', { name: 'Payment complete' }).waitFor();
    const id = (await page.locator('#reference').textContent()) ?? '';
    const stored = await api.request('GET', `/transactions/${id}`);
    t.equal(stored.body.status, 'processed');
    t.equal(stored.body.payment_method.bank_account.account_number, 'xxxxx6789');
    await page.close();
  });

  await t.test('enrollment page (a plain form post)', async (t) => {
    const link = (await api.request('POST', '/intents', { version: 'v2', json: { type: 'account_enrollment_link', account_enrollment_link: { entity: { country: 'US', type: 'business' } } } })).body;
    const page = await browser.newPage();
    await page.goto(api.url + new URL(link.url).pathname);
    await enter(page, page.getByLabel('Account name'), 'Harbor Books');
    await enter(page, page.getByLabel('Legal business name'), 'Harbor Books Inc');
    await enter(page, page.getByLabel('Tax id (EIN)'), '361234567');
    await enter(page, page.getByLabel('Routing number'), '036 001 808', 'paste');
    await enter(page, page.getByLabel('Account number'), '555 123 456', 'paste');
    await page.getByRole('button', { name: 'Enroll' }).click();
    await page.getByRole('heading', { name: 'You are enrolled' }).waitFor();
    await page.close();
    const intent = await eventually(() => api.request('GET', `/intents/${link.id}`, { version: 'v2' }), (r) => r.body.status === 'finished');
    const methods = (await api.request('GET', `/payment_methods?account_id=${intent.body.account_id}`, { version: 'v2' })).body.values;
    t.match(methods, [{ type: 'bank_account', bank_account: { routing_number: '036001808', account_number: 'xxxxx3456' } }]);
  });
});
