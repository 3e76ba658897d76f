/**
 * The hosted enrollment page `/enroll/<id>`: a plain form, no key needed; completing it creates
 * the account and its payout method and finishes the link; errors sit beside their inputs; used,
 * expired and unknown links get clear pages. The last test fills an account enrollment link's
 * page in chromium, as a prospective merchant would.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';
import { launchBrowser } from './helpers/browser.ts';

const api = await startTestApi(t);

async function page(path: string, form?: Record<string, string>) {
  const res = await fetch(api.url + path, form ? { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) } : {});
  return { status: res.status, html: await res.text(), csp: res.headers.get('content-security-policy') ?? '' };
}

t.test('a payouts enrollment link: the page collects a name and bank account and finishes the link', async (t) => {
  const link = (await api.request('POST', '/intents', { version: 'v2', json: { type: 'payouts_enrollment_link', payouts_enrollment_link: { entity_name: 'Jango', entity_type: 'business', purpose: 'Commissions' } } })).body;
  t.match(link.url, new RegExp(`/enroll/${link.id}$`));
  const shown = await page(`/enroll/${link.id}`);
  t.equal(shown.status, 200);
  t.match(shown.html, /<label for="account_number">Account number<\/label>/);
  t.match(shown.csp, /form-action 'self'/);
  t.match(shown.csp, /frame-ancestors 'none'/);
  const bad = await page(`/enroll/${link.id}`, { name: 'Ann Payee', routing_number: '123456789', account_number: '12' });
  t.equal(bad.status, 400);
  t.match(bad.html, /aria-describedby="routing_number-error"/, 'the error is tied to its input');
  const missing = await page(`/enroll/${link.id}`, { name: '', routing_number: '036001808', account_number: '123456789' });
  t.match(missing.html, /id="name-error">Required/);
  const done = await page(`/enroll/${link.id}`, { name: 'Ann Payee', email: 'ann@example.com', routing_number: '036001808', account_number: '123456789' });
  t.equal(done.status, 200, done.html.slice(0, 500));
  t.match(done.html, /You are enrolled/);
  const after = (await api.request('GET', `/intents/${link.id}`, { version: 'v2' })).body;
  t.equal(after.status, 'finished');
  t.match(after.account_id, /^acct_/);
  const methods = (await api.request('GET', `/payment_methods?account_id=${after.account_id}`, { version: 'v2' })).body.values;
  t.match(methods, [{ type: 'bank_account', account_defaults: { funding: 'all' }, bank_account: { account_number: 'xxxxx6789' } }]);
  const again = await page(`/enroll/${link.id}`);
  t.equal(again.status, 410);
  t.match(again.html, /Already enrolled/);
});

t.test('a payment activation enrolls the same way; unknown links are 404 pages', async (t) => {
  const activation = (await api.request('POST', '/payment_activations', { json: { intent: { entity_name: 'Boba' } } })).body;
  const done = await page(`/enroll/${activation.id}`, { name: 'Boba Fett', routing_number: '036001808', account_number: '987654321' });
  t.equal(done.status, 200);
  t.equal((await api.request('GET', `/payment_activations/${activation.id}`)).body.status, 'finished');
  for (const id of ['int_nothing', 'pa_nothing', 'acct_x', '..%2F..']) {
    const unknown = await page(`/enroll/${id}`);
    t.equal(unknown.status, 404, id);
    t.notMatch(unknown.html, /error_type|stack/);
  }
});

t.test('in chromium, an account enrollment link\'s page opens a processing account with its entity', async (t) => {
  const browser = await launchBrowser(t);
  const link = (await api.request('POST', '/intents', { version: 'v2', json: { type: 'account_enrollment_link', account_enrollment_link: { entity: { country: 'US', type: 'business' } } } })).body;
  const page = await browser.newPage();
  await page.setViewportSize({ width: 375, height: 740 });
  const response = await page.goto(api.url + new URL(link.url).pathname);
  t.match(response?.headers()['content-security-policy'] ?? '', /default-src 'none'/);
  t.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Open your processing account');
  await page.getByLabel('Account name').pressSequentially('Harbor Books');
  await page.getByLabel('Legal business name').pressSequentially('Harbor Books Inc');
  await page.getByLabel('Routing number').pressSequentially('036001808');
  await page.getByLabel('Account number').pressSequentially('555123456');
  await page.getByRole('button', { name: 'Enroll' }).click();
  const error = page.locator('#tax_id-error');
  await error.waitFor({ state: 'visible' });
  t.equal(await error.textContent(), 'Required');
  t.equal(await page.getByLabel('Tax id (EIN)').getAttribute('aria-describedby'), 'tax_id-error', 'the error is tied to its input');
  t.equal(await page.getByLabel('Account name').inputValue(), 'Harbor Books', 'what was typed is kept');
  await page.getByLabel('Tax id (EIN)').pressSequentially('361234567');
  await page.getByLabel('Tax id (EIN)').press('Enter');
  await page.getByRole('heading', { name: 'You are enrolled' }).waitFor({ state: 'visible' });
  await page.close();

  const intent = (await api.request('GET', `/intents/${link.id}`, { version: 'v2' })).body;
  t.equal(intent.status, 'finished');
  const account = (await api.request('GET', `/accounts/${intent.account_id}`, { version: 'v2' })).body;
  t.match(account, { type: 'processing', name: 'Harbor Books', entity: { type: 'business', country: 'US', legal_name: 'Harbor Books Inc', tax_id: { value: 'xxxxx4567' } } });
  const methods = (await api.request('GET', `/payment_methods?account_id=${intent.account_id}`, { version: 'v2' })).body.values;
  t.match(methods, [{ type: 'bank_account', account_defaults: { funding: 'all' }, bank_account: { account_number: 'xxxxx3456' } }]);
});
