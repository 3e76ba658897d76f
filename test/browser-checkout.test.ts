/**
 * The hosted checkout page of a checkout_page intent (CONTRACT §16) in a real browser, at phone
 * width: amount and description, labelled inputs, an error tied to its input, the payment stored,
 * the redirect to completed_url with pl_transaction_id; and clear pages for a used, expired or
 * unknown token.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';
import { clear, launchBrowser, screenshot, startMerchantSite } from './helpers/browser.ts';
import { hashKey } from '../api/keys.ts';

const api = await startTestApi(t);
const browser = await launchBrowser(t);
const site = await startMerchantSite(t);
await api.request('POST', '/processing_accounts', { json: { name: 'Mug Shop' } });
site.pages.set('/thanks', '<!doctype html><title>Thanks</title><h1>Thanks for your order</h1>');

async function checkoutToken(options: Record<string, unknown> = {}): Promise<{ id: string; url: string }> {
  const res = await api.request('POST', '/access_tokens', {
    json: {
      type: 'client',
      intent: {
        checkout_page: {
          payment: { amount: 45.67, description: 'Blue mug' },
          redirects: { completed_url: `${site.url}/thanks?order=9`, return_url: `${site.url}/cart` },
          ...options,
        },
      },
    },
  });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return { id: res.body.id, url: res.body.intent.checkout_page.url };
}

const used = await checkoutToken({ billing_address: true });

t.test('the checkout page shows an error under its input, then pays and redirects to completed_url with pl_transaction_id', async (t) => {
  t.match(used.url, new RegExp(`/checkout/${used.id}$`), 'the token response carries intent.checkout_page.url');
  const page = await browser.newPage();
  await page.setViewportSize({ width: 375, height: 740 });
  const response = await page.goto(`${api.url}/checkout/${used.id}`);
  const csp = response?.headers()['content-security-policy'] ?? '';
  t.match(csp, /default-src 'none'/);
  t.match(csp, /frame-ancestors 'none'/);
  t.equal(response?.headers()['referrer-policy'], 'no-referrer', 'the token in the address is not sent on as a referrer');
  t.match(await page.textContent('main'), /Blue mug/);
  const pay = page.getByRole('button', { name: 'Pay 45.67' });
  t.equal(await pay.count(), 1, 'the button says what it does');
  t.equal(await page.getByRole('link', { name: 'Back' }).getAttribute('href'), `${site.url}/cart`);
  t.ok(await page.locator('html').evaluate((html) => html.scrollWidth <= 375), 'no sideways scrolling at phone width');
  await screenshot(page, 'checkout.png');

  const number = page.getByLabel('Card number');
  t.equal(await number.getAttribute('autocomplete'), 'cc-number');
  await number.pressSequentially('4242 4242 4242 4241');
  await page.getByLabel('Expiration date (MM/YY)').pressSequentially('12/35');
  await page.getByLabel('Security code').pressSequentially('123');
  await page.getByLabel('Name on card').pressSequentially('Ann Buyer');
  await page.getByLabel('Postal code').pressSequentially('10001');
  await pay.click();
  const error = page.locator('#card_number-error');
  await page.locator('#form-error').waitFor({ state: 'visible' });
  await error.waitFor({ state: 'visible' });
  t.equal(await error.textContent(), 'This card number is not valid: check each digit');
  t.equal(await number.getAttribute('aria-describedby'), 'card_number-error', 'the error is tied to its input');
  t.equal(await number.getAttribute('aria-invalid'), 'true');
  t.ok(await number.evaluate((input) => input === input.ownerDocument.activeElement), 'focus moves to the field to fix');

  await clear(number);
  await number.pressSequentially('4242 4242 4242 4242');
  await pay.click();
  await page.waitForURL((url) => url.pathname === '/thanks');
  const landed = new URL(page.url());
  t.equal(landed.searchParams.get('order'), '9', 'the merchant\'s own query is kept');
  const id = landed.searchParams.get('pl_transaction_id') ?? '';
  t.match(id, /^txn_/);
  const stored = await api.request('GET', `/transactions/${id}`);
  t.equal(stored.body.amount, 45.67);
  t.equal(stored.body.status, 'processed');
  t.equal(stored.body.description, 'Blue mug');
  await page.close();
});

t.test('the checkout page is usable by keyboard and pays by bank account when the intent allows it', async (t) => {
  const bank = await checkoutToken({ bank_account_payments: true });
  const page = await browser.newPage();
  await page.setViewportSize({ width: 375, height: 740 });
  await page.goto(`${api.url}/checkout/${bank.id}`);
  const order: string[] = [];
  for (let i = 0; i < 6; i++) {
    await page.keyboard.press('Tab');
    order.push(await page.locator(':focus').evaluate((focused) => focused.id || (focused as unknown as { value: string }).value || focused.tagName));
  }
  t.same(order, ['card', 'card_number', 'expiry', 'card_code', 'account_holder', 'pay'], 'focus follows the form top to bottom');
  await page.focus('input[name=method][value=card]');
  await page.keyboard.press('ArrowRight');
  t.ok(await page.getByLabel('Bank account').isChecked(), 'the arrow key chooses the bank account');
  await page.getByLabel('Routing number').waitFor({ state: 'visible' });
  await page.getByLabel('Routing number').pressSequentially('021000021');
  await page.getByLabel('Account number').pressSequentially('123456789');
  await page.getByLabel('Account holder name').pressSequentially('Ann Buyer');
  await page.getByLabel('Account holder name').press('Enter');
  await page.waitForURL((url) => url.pathname === '/thanks');
  const id = new URL(page.url()).searchParams.get('pl_transaction_id') ?? '';
  const stored = await api.request('GET', `/transactions/${id}`);
  t.equal(stored.body.amount, 45.67);
  t.equal(stored.body.payment_method?.type, 'bank_account');
  await page.close();
});

t.test('a used, expired or unknown checkout shows a clear page, never an error dump', async (t) => {
  const again = await fetch(`${api.url}/checkout/${used.id}`);
  t.equal(again.status, 410);
  const usedPage = await again.text();
  t.match(usedPage, /already been used/);
  t.match(usedPage, /<a class="back" href="[^"]+\/cart">Back<\/a>/);

  const late = await checkoutToken();
  await api.db.raw(`update access_tokens set expires_at = now() - interval '1 minute' where token_hash = ?`, [hashKey(late.id)]);
  const expired = await fetch(`${api.url}/checkout/${late.id}`);
  t.equal(expired.status, 410);
  t.match(await expired.text(), /has expired/);

  for (const path of ['/checkout/test_client_key_NotARealToken0123456789', '/checkout/whatever']) {
    const unknown = await fetch(api.url + path);
    t.equal(unknown.status, 404, path);
    t.match(unknown.headers.get('content-type'), /text\/html/);
    const html = await unknown.text();
    t.match(html, /Checkout not found/);
    t.notMatch(html, /error_type|stack|at /);
  }
});

t.test('a one-time payment link\'s page pays the link once, then says it has been paid', async (t) => {
  const link = await api.request('POST', '/payment_links', { json: { type: 'one_time', description: 'Invoice 7', amount: 10 } });
  t.equal(link.status, 200, JSON.stringify(link.body));
  const path = new URL(link.body.url).pathname;
  t.equal(path, `/pay/${link.body.id}`);
  const page = await browser.newPage();
  const response = await page.goto(api.url + path);
  t.match(response?.headers()['content-security-policy'] ?? '', /default-src 'none'/);
  t.match(await page.textContent('main'), /Invoice 7/);
  await page.getByLabel('Card number').pressSequentially('4242 4242 4242 4242');
  await page.getByLabel('Expiration date (MM/YY)').pressSequentially('12/35');
  await page.getByLabel('Security code').pressSequentially('123');
  await page.getByRole('button', { name: 'Pay 10.00' }).click();
  const done = page.getByRole('heading', { name: 'Payment complete' });
  await done.waitFor({ state: 'visible' });
  const id = (await page.textContent('#reference')) ?? '';
  t.match(id, /^txn_/);
  await page.close();

  const paid = await api.request('GET', `/transactions/${id}?fields=*,payment_link_id`);
  t.equal(paid.body.amount, 10);
  t.equal(paid.body.payment_link_id, link.body.id);
  const after = await api.request('GET', `/payment_links/${link.body.id}`);
  t.equal(after.body.status, 'completed');
  t.equal(after.body.transaction_id, id);
  const again = await fetch(api.url + path);
  t.equal(again.status, 410);
  t.match(await again.text(), /has been paid/);
  const unknown = await fetch(`${api.url}/pay/pay_NotARealLink0123456789`);
  t.equal(unknown.status, 404);
  t.match(await unknown.text(), /Payment link not found/);
});
