/**
 * Payload.ProcessingAccount in a real browser (CONTRACT §16): a merchant page on its own loopback
 * origin opens Settle's onboarding form (in a container or a modal) with a
 * processing_account_plugin client token; the business's details are typed into Settle's frame,
 * the processing account is opened through the API's own steps, and the merchant page hears
 * `loaded`, `account_created` and `success` with the id the API then returns. Errors sit beside
 * their inputs; a used, expired or unknown token gets a clear page.
 */
import t from 'tap';
import type { FrameLocator, Page } from 'playwright-core';
import { startTestApi } from './helpers/api.ts';
import { clear, launchBrowser, startMerchantSite } from './helpers/browser.ts';
import { hashKey } from '../api/keys.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t);
const browser = await launchBrowser(t);
const site = await startMerchantSite(t);
const V2 = { version: 'v2' };

interface Seen {
  type: string;
  account_id?: string;
}

/** A merchant page that opens Payload.ProcessingAccount with `options` and reports every event. */
function merchantPage(token: string, body: string, options: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Marketplace</title></head><body>
${body}
<script src="${api.url}/client.js"></script>
<script>
  Payload(${JSON.stringify(token)});
  var onboarding = new Payload.ProcessingAccount(${options});
  ['loaded', 'account_created', 'success', 'closed'].forEach(function (name) {
    onboarding.on(name, function (e) {
      var seen = { type: e.type, account_id: e.account && e.account.id };
      // Also kept in the tab: a form submission may navigate before the report reaches the test.
      sessionStorage.setItem('seen', JSON.stringify(JSON.parse(sessionStorage.getItem('seen') || '[]').concat([seen])));
      reportEvent(seen);
    });
  });
</script>
</body></html>`;
}

async function openMerchant(path: string, html: string): Promise<{ page: Page; events: Seen[] }> {
  site.pages.set(path, html);
  const page = await browser.newPage();
  const events: Seen[] = [];
  await page.exposeFunction('reportEvent', (e: Seen) => events.push(e));
  await page.goto(site.url + path);
  return { page, events };
}

async function until(condition: () => boolean, what: string, ms = 10_000): Promise<void> {
  if (!(await eventually(condition, Boolean, ms, 20))) throw new Error(`timed out waiting for ${what}`);
}

async function fillBusiness(frame: FrameLocator, fields: Record<string, string>): Promise<void> {
  for (const [label, value] of Object.entries(fields)) {
    const input = frame.getByLabel(label, { exact: true });
    await clear(input);
    await input.pressSequentially(value);
  }
}

const BUSINESS = {
  'Account name': 'Corner Bakery',
  'Legal business name': 'Corner Bakery LLC',
  'Tax id (EIN)': '',
  'Routing number': '036001808',
  'Account number': '123456789',
};

t.test('in a container: errors beside their inputs, then account_created and success with the id the API returns', async (t) => {
  const intent = (await api.request('POST', '/intents', { ...V2, json: { type: 'processing_account_plugin', processing_account_plugin: {} } })).body;
  t.match(intent.client_token, /^test_client_key_/);
  const { page, events } = await openMerchant('/onboard', merchantPage(intent.client_token, '<h1>Sell with us</h1><div id="onboarding"></div>',
    `{ container: document.getElementById('onboarding') }`));
  await until(() => events.some((e) => e.type === 'loaded'), 'the loaded event');
  const frame = page.frameLocator('#onboarding iframe');
  t.equal(await page.locator('#onboarding iframe').getAttribute('title'), 'Processing account');
  t.equal(await frame.getByLabel('Account name').getAttribute('autocomplete'), 'organization', 'inputs carry autocomplete tokens');
  const create = frame.getByRole('button', { name: 'Create account' });
  t.equal(await create.count(), 1, 'the button says what it does');

  await fillBusiness(frame, BUSINESS);
  await create.click();
  const required = frame.locator('#tax_id-error');
  await required.waitFor({ state: 'visible' });
  t.equal(await required.textContent(), 'Required');
  t.equal(await frame.getByLabel('Tax id (EIN)').getAttribute('aria-describedby'), 'tax_id-error', 'the error is tied to its input');
  t.equal(await frame.getByLabel('Legal business name').inputValue(), 'Corner Bakery LLC', 'what was typed is kept');

  await fillBusiness(frame, { 'Tax id (EIN)': '123456789', 'Routing number': '123456789' });
  await frame.getByRole('button', { name: 'Create account' }).click();
  await frame.locator('#routing_number-error').waitFor({ state: 'visible' });
  t.equal(await frame.getByLabel('Routing number').getAttribute('aria-describedby'), 'routing_number-error', 'the API\'s answer is shown at its input');
  t.notOk(events.some((e) => e.type === 'account_created'), 'nothing was created yet');

  await fillBusiness(frame, { 'Routing number': '036001808' });
  await frame.getByRole('button', { name: 'Create account' }).click();
  await until(() => events.some((e) => e.type === 'success'), 'the success event');
  const id = events.find((e) => e.type === 'account_created')?.account_id ?? '';
  t.match(id, /^acct_/);
  t.same(events.map((e) => [e.type, e.account_id]), [['loaded', undefined], ['account_created', id], ['success', id]],
    'loaded once, though the frame posted its form three times');
  t.match(await frame.locator('main').textContent(), /Processing account created/);
  const merchantDom = await page.content();
  t.notMatch(merchantDom, /123456789/, 'the tax id and bank numbers never enter the merchant page');

  const account = await api.request('GET', `/accounts/${id}`, V2);
  t.equal(account.status, 200);
  t.match(account.body, { id, type: 'processing', name: 'Corner Bakery', entity: { type: 'business', legal_name: 'Corner Bakery LLC', tax_id: { value: 'xxxxx6789' } } });
  const methods = (await api.request('GET', `/payment_methods?account_id=${id}`, V2)).body.values;
  t.match(methods, [{ type: 'bank_account', account_defaults: { funding: 'all' }, bank_account: { account_number: 'xxxxx6789' } }], 'the bank account funds it');
  t.match((await api.request('GET', `/intents/${intent.id}`, V2)).body, { status: 'finished', account_id: id });

  const again = await fetch(`${api.url}/elements/processing-account/${intent.client_token}`);
  t.equal(again.status, 410);
  t.match(await again.text(), /This form has been used/);
  await page.close();
});

t.test('without a container it is a modal; with a form it posts pl_account_id to the merchant', async (t) => {
  const token = (await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { processing_account_plugin: {} } } })).body.id;
  const { page, events } = await openMerchant('/onboard-modal', merchantPage(token,
    '<form action="/onboarded" method="post"><input type="hidden" name="seller" value="S-7"></form>', `{ form: document.querySelector('form') }`));
  await until(() => events.some((e) => e.type === 'loaded'), 'the loaded event');
  t.equal(await page.getByRole('dialog', { name: 'Processing account' }).count(), 1, 'a modal dialog');
  const frame = page.frameLocator('iframe[title="Processing account"]');
  await fillBusiness(frame, { ...BUSINESS, 'Tax id (EIN)': '987654321' });
  const posted = site.waitForPost('/onboarded');
  await frame.getByRole('button', { name: 'Create account' }).click();
  const post = await posted;
  const id = post.form.get('pl_account_id') ?? '';
  t.match(id, /^acct_/);
  t.equal(post.form.get('seller'), 'S-7', 'the merchant\'s own fields go with it');
  await page.waitForURL(/\/onboarded$/);
  const seen = JSON.parse(String(await page.evaluate(() => (globalThis as unknown as { sessionStorage: { getItem: (key: string) => string | null } }).sessionStorage.getItem('seen')) ?? '[]')) as Seen[];
  t.same(seen.filter((e) => e.type !== 'loaded').map((e) => [e.type, e.account_id]), [['account_created', id], ['success', id]]);
  const v1 = await api.request('GET', `/processing_accounts/${id}`);
  t.equal(v1.status, 200);
  t.equal(v1.body.name, 'Corner Bakery');
  await page.close();
});

t.test('closing the modal fires closed and removes it', async (t) => {
  const token = (await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { processing_account_plugin: {} } } })).body.id;
  const { page, events } = await openMerchant('/onboard-close', merchantPage(token, '<p>Shop</p>', '{}'));
  await until(() => events.some((e) => e.type === 'loaded'), 'the loaded event');
  await page.keyboard.press('Escape');
  await until(() => events.some((e) => e.type === 'closed'), 'the closed event');
  t.equal(await page.getByRole('dialog').count(), 0);
  await page.close();
});

t.test('the frame: a strict CSP; unknown, other-kind, expired and used tokens get clear pages', async (t) => {
  const token = (await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { processing_account_plugin: {} } } })).body.id;
  const open = await fetch(`${api.url}/elements/processing-account/${token}`);
  t.equal(open.status, 200);
  const csp = open.headers.get('content-security-policy') ?? '';
  t.match(csp, /default-src 'none'/);
  t.match(csp, /form-action 'self'/);
  t.match(csp, /frame-ancestors \*/, 'merchants frame it');
  t.notMatch(await open.text(), /https?:\/\/(?!127\.0\.0\.1)/, 'nothing from another origin');

  const checkout = (await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { checkout_plugin: { amount: 5, description: 'x' } } } })).body.id;
  for (const path of [`/elements/processing-account/${checkout}`, '/elements/processing-account/test_client_key_NotARealToken0123456789', '/elements/processing-account/nonsense']) {
    const unknown = await fetch(api.url + path);
    t.equal(unknown.status, 404, path);
    const html = await unknown.text();
    t.match(html, /Form not found/);
    t.notMatch(html, /error_type|stack/);
  }

  await api.db.raw(`update access_tokens set expires_at = now() - interval '1 minute' where token_hash = ?`, [hashKey(token)]);
  const expired = await fetch(`${api.url}/elements/processing-account/${token}`, {
    method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ name: 'Late', legal_name: 'Late LLC', tax_id: '123456789', routing_number: '036001808', account_number: '123456789' }),
  });
  t.equal(expired.status, 410);
  t.match(await expired.text(), /This form has expired/);
  t.equal(Number((await api.db('accounts').where({ type: 'processing' }).whereRaw(`data->>'name' = 'Late'`).count('* as n'))[0].n), 0, 'nothing was created');
});
