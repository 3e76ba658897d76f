/**
 * The operator console (CONTRACT §17) in a real browser against the real web, worker and
 * reporting processes: signing in, finding a payment with `q`, resending webhook deliveries to a
 * loopback receiver (from a delivery, a webhook's attempt rows and an event's page), downloading a
 * view's rows as CSV; the key stays out of cookies and URLs. Searching, acting and Reports are in
 * console-desk.test.ts.
 *
 * The tests wait on locators, never on a string predicate: Playwright re-evaluates one with eval
 * on each poll, which the console's CSP (`script-src 'self'`) refuses.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import type { Locator, Page, Request } from 'playwright-core';
import { revokeKey } from '../api/db/keys.ts';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { launchBrowser, screenshot } from './helpers/browser.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';
import { reportingFirst } from './reporting-support.ts';
import { parseCsv } from './helpers/csv.ts';

/** The most rows one CSV export holds here: fewer than the export shop's transactions, more than a page. */
const EXPORT_MAX_ROWS = 28;

const { databaseUrl, webEnv } = await reportingFirst(t);
const api = await startTestApi(t, { ...webEnv, SETTLE_EXPORT_MAX_ROWS: String(EXPORT_MAX_ROWS) }, {}, databaseUrl);
await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50' });
const receiver = await startReceiver(t);
const browser = await launchBrowser(t);

const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };

async function pay(amount: number, description: string): Promise<string> {
  const res = await api.request('POST', '/transactions', { json: { type: 'payment', amount, payment_method: CARD, description } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

// The receiver fails every delivery until told otherwise; no retries, so the failure stays failed.
receiver.respond = () => ({ status: 500, body: 'receiver is down' });
const webhook = await api.request('POST', '/webhooks', { json: { trigger: 'payment', url: `${receiver.url}/hooks`, retries: 0 } });
for (const [amount, description] of [[18, 'Green teapot'], [7.25, 'Tea sampler'], [31, 'Cast iron kettle']] as const) await pay(amount, description);
const mug = await pay(12.5, 'Blue mug');
const declined = await api.request('POST', '/transactions', { json: { type: 'payment', amount: 40, description: 'Declined card', payment_method: { type: 'card', card: { card_number: '4111 1111 1111 9903', expiry: '12/35' } } } });
const refund = await api.request('POST', '/transactions', { json: { type: 'refund', amount: 2.5, ledger: [{ assoc_transaction_id: mug }] } });
const customer = await api.request('POST', '/customers', { json: { name: 'Ann Buyer', email: 'ann@example.com' } });
await api.request('POST', '/invoices', { json: { customer_id: customer.body.id, due_date: '2026-12-01', items: [{ entry_type: 'charge', amount: 20 }] } });
await api.request('POST', '/payment_links', { json: { type: 'one_time', description: 'Gift card', amount: 25 } });
await receiver.waitFor(4);

/**
 * A shop of its own with payments of 1 to 30 ("Order 1"…) and one declined card of 40: 31 rows,
 * over the export ceiling; the 27 processed ones above 3 fill more than a page and fit in an export.
 */
const exportShop = await api.newKey('Export shop', 'test');
for (let amount = 1; amount <= 30; amount++) {
  const res = await api.request('POST', '/transactions', { key: exportShop, json: { type: 'payment', amount, payment_method: CARD, description: `Order ${amount}` } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
}
await api.request('POST', '/transactions', { key: exportShop, json: { type: 'payment', amount: 40, description: 'Declined card', payment_method: { type: 'card', card: { card_number: '4111 1111 1111 9903', expiry: '12/35' } } } });

/** Every URL the browser asks for, and the page's own address after each navigation. */
function trackUrls(page: Page): string[] {
  const seen: string[] = [];
  page.on('request', (request: Request) => seen.push(request.url()));
  page.on('framenavigated', (frame) => seen.push(frame.url()));
  return seen;
}

/** Types into a field as a person does: select what is there, then press each key. */
async function typeInto(field: Locator, text: string): Promise<void> {
  await field.press('ControlOrMeta+A');
  await field.pressSequentially(text);
}

async function signIn(page: Page, key: string): Promise<void> {
  await page.goto(`${api.url}/console`);
  await typeInto(page.getByLabel('Secret key'), key);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Presses "Download CSV" and reads the file the browser saved: its name, header and rows. */
async function downloadCsv(page: Page): Promise<{ name: string; header: string[]; rows: string[][] }> {
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
  const failure = await download.failure();
  if (failure) throw new Error(`the download failed: ${failure}`);
  const [header, ...rows] = parseCsv(readFileSync(await download.path(), 'utf8'));
  return { name: download.suggestedFilename(), header, rows };
}

/** The cells of one column of a CSV, by its header name. */
function column(file: { header: string[]; rows: string[][] }, name: string): string[] {
  const index = file.header.indexOf(name);
  if (index < 0) throw new Error(`no column ${name} in ${file.header.join(',')}`);
  return file.rows.map((row) => row[index]);
}

/** How many items the tab keeps in session storage, where the console keeps the key. */
function sessionStorageLength(page: Page): Promise<number> {
  return page.evaluate(() => sessionStorage.length);
}

t.test('the console loads without a key and shows the sign-in form under a strict CSP', async (t) => {
  const page = await browser.newPage();
  const response = await page.goto(`${api.url}/console`);
  t.equal(response?.status(), 200);
  const csp = response?.headers()['content-security-policy'] ?? '';
  t.match(csp, /default-src 'none'/);
  t.match(csp, /script-src 'self'(;|$)/, 'no inline or remote script');
  t.match(csp, /style-src 'self'(;|$)/, 'no inline style');
  t.match(csp, /frame-ancestors 'none'/);
  await page.getByLabel('Secret key').waitFor({ state: 'visible' });
  t.equal(await page.getByRole('button', { name: 'Sign in' }).count(), 1);
  t.equal(await page.getByRole('navigation', { name: 'Views' }).count(), 0, 'nothing but the form before signing in');
  await page.close();
});

t.test('a key the API does not accept, or a string that is no secret key, shows a clear error and keeps nothing', async (t) => {
  const page = await browser.newPage();
  await signIn(page, `test_secret_key_${'x'.repeat(32)}`);
  const error = page.locator('#sign-in-error');
  await error.filter({ hasText: 'not accepted' }).waitFor();
  t.equal(await error.textContent(), 'This key was not accepted: Invalid or revoked API key.');
  t.equal(await page.getByLabel('Secret key').getAttribute('aria-invalid'), 'true');

  await typeInto(page.getByLabel('Secret key'), 'test_client_key_abc');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await error.filter({ hasText: 'not a secret key' }).waitFor();
  t.equal(await sessionStorageLength(page), 0, 'no key is stored');
  await page.close();
});

t.test('a live key is marked "Live mode", a test key "Test mode"', async (t) => {
  const page = await browser.newPage();
  await signIn(page, await api.newKey('acme', 'live'));
  t.equal(await page.locator('#mode-badge').textContent(), 'Live mode');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('Secret key').waitFor();
  t.equal(await sessionStorageLength(page), 0, 'signing out forgets the key');
  await typeInto(page.getByLabel('Secret key'), api.key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  t.equal(await page.locator('#mode-badge').textContent(), 'Test mode');
  await page.close();
});

t.test('an operator finds a payment with q, opens its failed delivery, and Resend reaches the receiver and shows the new attempt', async (t) => {
  const page = await browser.newPage();
  await page.setViewportSize({ width: 1280, height: 800 });
  const urls = trackUrls(page);
  await signIn(page, api.key);
  await page.locator('tbody tr').first().waitFor();
  t.equal(await page.locator('tbody tr').count(), 6, 'the newest transactions, a page of them');
  await screenshot(page, 'console-transactions.png');

  await typeInto(page.getByLabel('Filter (q)'), 'description == "Blue mug"');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/#\/transactions\?q=/);
  const rows = page.locator('tbody tr');
  t.equal(await eventually(() => rows.count(), (n) => n === 1), 1, 'one row left');
  t.match(await rows.textContent(), /Blue mug/, 'only the payment the filter names');
  await page.getByRole('link', { name: mug }).click();

  const operations = page.locator('section').filter({ has: page.getByRole('heading', { name: 'Operations' }) });
  await operations.getByRole('cell', { name: 'process', exact: true }).waitFor();
  const events = page.locator('section').filter({ has: page.getByRole('heading', { name: 'Events' }) });
  await events.getByRole('cell', { name: 'payment', exact: true }).waitFor();
  const ledger = page.locator('section').filter({ has: page.getByRole('heading', { name: 'Ledger and transfers' }) });
  await ledger.getByRole('link', { name: refund.body.id }).first().waitFor();
  await events.getByRole('link', { name: /^evt_/ }).click();

  const attempts = page.locator('section').filter({ has: page.getByRole('heading', { name: 'Attempts' }) }).locator('tbody tr');
  await attempts.first().waitFor();
  t.equal(await attempts.count(), 1);
  t.match(await attempts.first().textContent(), /Failed \(HTTP 500\)/);
  t.match(await attempts.first().textContent(), /receiver is down/, 'what the receiver answered');

  receiver.respond = () => ({ status: 200, body: 'ok' });
  await page.getByRole('button', { name: 'Resend' }).click();
  const [, resent] = await receiver.waitFor(5).then((all) => all.filter((r) => JSON.parse(r.body).triggered_on.id === mug));
  t.ok(resent, 'the resent delivery reached the receiver');
  t.equal(resent.headers['x-service-event-id'], JSON.parse(resent.body).event_id, 'the same event, resent');
  await page.getByText('The new attempt arrived').waitFor();
  t.equal(await eventually(() => attempts.count(), (n) => n === 2), 2);
  t.match(await attempts.first().textContent(), /Delivered \(HTTP 200\)/, 'the new attempt shows at the top');
  await screenshot(page, 'console-webhooks.png');

  await page.getByRole('link', { name: 'Processing accounts' }).click();
  await page.getByRole('heading', { level: 1, name: 'Processing accounts' }).waitFor();
  const account = page.locator('tbody tr').first();
  await account.waitFor();
  t.match(await account.textContent(), /acme/);
  t.match(await account.textContent(), /available|—/, 'the balance, or "—" while the API has none');

  t.ok(urls.length > 20, 'the page, its modules and its API calls were seen');
  t.same(urls.filter((url) => url.includes(api.key)), [], 'the key is in no URL requested or visited');
  t.notOk(page.url().includes(api.key), 'nor in the address shown');
  const cookies = await browser.cookies();
  t.notOk(cookies.some((c) => c.value.includes(api.key) || c.name.includes(api.key)), 'the key is in no cookie');
  t.equal(await page.evaluate(() => sessionStorage.getItem('settle.console.key')), api.key, 'the key lives in the tab\'s session storage');
  const lists = urls.map((u) => new URL(u)).filter((u) => /^\/(transactions|webhook_logs|transaction_operations|transfers|processing_accounts|webhooks\/[^/]+\/logs)$/.test(u.pathname));
  t.ok(lists.length >= 5);
  t.same(lists.filter((u) => !(Number(u.searchParams.get('limit')) > 0 && Number(u.searchParams.get('limit')) <= 100)).map(String), [], 'every list asks for one page, never a whole table');
  await page.close();
});

/** What reached the receiver at `path`, as the event ids it carried. */
function eventIdsAt(path: string): string[] {
  return receiver.received.filter((r) => r.url === path).map((r) => JSON.parse(r.body).event_id);
}

/** A shop of its own with the given webhooks (trigger `payment`) and one payment delivered to each. */
async function shopWithDeliveredPayment(name: string, paths: string[]) {
  const key = await api.newKey(name, 'test');
  const hooks: string[] = [];
  for (const path of paths) {
    const hook = await api.request('POST', '/webhooks', { key, json: { trigger: 'payment', url: `${receiver.url}${path}`, retries: 0 } });
    if (hook.status !== 200) throw new Error(JSON.stringify(hook.body));
    hooks.push(hook.body.id);
  }
  const paid = await api.request('POST', '/transactions', { key, json: { type: 'payment', amount: 9, payment_method: CARD, description: `${name} order` } });
  if (paid.status !== 200) throw new Error(JSON.stringify(paid.body));
  await eventually(async () => paths.map(eventIdsAt), (seen) => seen.every((ids) => ids.length === 1), 10_000);
  return { key, hooks, eventId: eventIdsAt(paths[0])[0] };
}

t.test('Resend on an attempt row of a webhook\'s page sends a delivered event again and lists its attempt without a reload', async (t) => {
  receiver.respond = () => ({ status: 200, body: 'ok' });
  const { key, hooks: [hook], eventId } = await shopWithDeliveredPayment('Row shop', ['/row-shop']);
  t.ok(eventId, 'the payment event was delivered');
  const page = await browser.newPage();
  let loads = 0;
  page.on('load', () => loads++);
  await signIn(page, key);
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Webhooks', exact: true }).click();
  await page.getByRole('link', { name: hook }).click();
  const attempts = page.locator('section').filter({ has: page.getByRole('heading', { name: 'Delivery attempts' }) }).locator('tbody tr');
  await attempts.filter({ hasText: 'Delivered (HTTP 200)' }).waitFor();
  t.equal(await attempts.count(), 1);
  const loadsBefore = loads;

  await attempts.first().getByRole('button', { name: 'Resend' }).click();
  t.same(await eventually(async () => eventIdsAt('/row-shop'), (ids) => ids.length === 2, 10_000), [eventId, eventId], 'the receiver got the same event a second time');
  await page.getByText('The new attempt arrived').waitFor();
  t.equal(await eventually(() => attempts.count(), (n) => n === 2), 2, 'the new attempt is listed');
  // The attempt is listed as it goes out (in flight), then with its answer.
  t.match(await eventually(async () => (await attempts.first().textContent()) ?? '', (text) => /Delivered \(HTTP 200\)/.test(text)), /Delivered \(HTTP 200\)/);
  t.equal(loads, loadsBefore, 'without reloading the page');
  t.equal(await attempts.getByRole('button', { name: 'Resend' }).count(), 2, 'each attempt row has its Resend');
  await page.close();
});

t.test('an event\'s page has a Resend for each webhook the event went to, which sends it to that webhook only', async (t) => {
  receiver.respond = (request) => (request.url === '/down-shop' ? { status: 503, body: 'down for upkeep' } : { status: 200, body: 'ok' });
  const { key, hooks: [up, down], eventId } = await shopWithDeliveredPayment('Two hooks shop', ['/up-shop', '/down-shop']);
  receiver.respond = () => ({ status: 200, body: 'ok' });
  const page = await browser.newPage();
  await signIn(page, key);
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Events', exact: true }).click();
  await page.getByRole('link', { name: eventId }).first().click();
  await page.getByRole('heading', { level: 1, name: `Event ${eventId}` }).waitFor();

  const toWebhook = (id: string) => page.locator('section').filter({ has: page.getByRole('heading', { name: `Webhook ${id}`, exact: true }) });
  await toWebhook(up).getByRole('cell', { name: 'Delivered (HTTP 200)' }).waitFor();
  await toWebhook(down).getByRole('cell', { name: 'Failed (HTTP 503)' }).waitFor();
  t.equal(await page.getByRole('button', { name: 'Resend' }).count(), 2, 'one Resend per webhook');

  await toWebhook(down).getByRole('button', { name: 'Resend' }).click();
  await toWebhook(down).getByText('The new attempt arrived').waitFor();
  t.same(eventIdsAt('/down-shop'), [eventId, eventId], 'that webhook got the event a second time');
  t.same(eventIdsAt('/up-shop'), [eventId], 'the other did not');
  const downAttempts = toWebhook(down).locator('tbody tr');
  t.equal(await eventually(() => downAttempts.count(), (n) => n === 2), 2, 'the new attempt is listed');
  t.match(await eventually(async () => (await downAttempts.first().textContent()) ?? '', (text) => /Delivered \(HTTP 200\)/.test(text)), /Delivered \(HTTP 200\)/, 'first, as the newest');
  t.equal(await toWebhook(up).locator('tbody tr').count(), 1);
  await page.close();
});

t.test('a webhook made without OAuth shows "—" for its OAuth params, and no null', async (t) => {
  const key = await api.newKey('No OAuth shop', 'test');
  const hook = await api.request('POST', '/webhooks', { key, json: { trigger: 'payment', url: `${receiver.url}/no-oauth` } });
  t.equal(hook.status, 200);
  const page = await browser.newPage();
  await signIn(page, key);
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Webhooks', exact: true }).click();
  await page.getByRole('link', { name: hook.body.id }).click();
  const oauth = page.locator('dt:text-is("oauth_params") + dd');
  t.equal(await oauth.textContent(), '—');
  await page.getByText('No delivery attempts yet.').waitFor();
  t.notMatch(await page.getByRole('main').textContent(), /null/);
  await page.close();
});

t.test('a key revoked while signed in takes the tab back to the sign-in form and forgets the key', async (t) => {
  const key = await api.newKey('acme', 'test');
  const page = await browser.newPage();
  await signIn(page, key);
  await page.locator('tbody tr').first().waitFor();
  await revokeKey(api.db, key.slice(0, key.length - 24));
  await page.getByRole('link', { name: 'Invoices', exact: true }).click();
  await page.getByLabel('Secret key').waitFor();
  t.match(await page.getByRole('status').textContent(), /no longer accepts this key/);
  t.equal(await sessionStorageLength(page), 0);
  await page.close();
});

t.test('every view in the navigation opens with its own title and no error', async (t) => {
  const page = await browser.newPage();
  await signIn(page, api.key);
  // allTextContents does not wait: the navigation appears once the key is checked.
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link').first().waitFor();
  const names = await page.getByRole('navigation', { name: 'Views' }).getByRole('link').allTextContents();
  t.same(names, ['Transactions', 'Customers', 'Events', 'Webhooks', 'Invoices', 'Billing schedules', 'Payment links', 'Intents', 'Processing accounts', 'Requests', 'Reports', 'API key']);
  for (const name of names) {
    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name, exact: true }).click();
    await page.getByRole('heading', { level: 1, name, exact: true }).waitFor();
    await page.locator('.loading').waitFor({ state: 'detached' });
    t.equal(await page.locator('main .error').count(), 0, `${name} shows no error`);
  }
  await page.getByRole('link', { name: 'Invoices', exact: true }).click();
  await page.getByRole('cell', { name: '20.00' }).first().waitFor();
  await page.getByRole('link', { name: 'Payment links', exact: true }).click();
  await page.getByRole('cell', { name: 'Gift card' }).waitFor();
  await page.close();
});

t.test('Download CSV on Transactions saves every transaction the typed filter matches, more than the page shows, as transactions.csv', async (t) => {
  const page = await browser.newPage();
  const urls = trackUrls(page);
  await signIn(page, exportShop);
  const rows = page.locator('tbody tr');
  await rows.first().filter({ hasText: 'Declined card' }).waitFor();
  const filter = 'status == "processed" && amount > 3';
  await typeInto(page.getByLabel('Filter (q)'), filter);
  await page.getByRole('button', { name: 'Filter' }).click();
  await rows.first().filter({ hasText: 'Order 30' }).waitFor();
  t.equal(await rows.count(), 25, 'the page shows 25 of them');

  const file = await downloadCsv(page);
  t.equal(file.name, 'transactions.csv');
  t.same(file.header.slice(0, 2), ['id', 'object'], 'the header names the fields, id first');
  for (const name of ['amount', 'status', 'description', 'created_at']) t.ok(file.header.includes(name), `the header has ${name}`);
  const matching = await api.request('GET', `/transactions?q=${encodeURIComponent(filter)}`, { key: exportShop });
  t.equal(matching.status, 200);
  t.equal(file.rows.length, 27, 'every matching transaction, not one page');
  t.same(column(file, 'id').sort(), matching.body.values.map((o: { id: string }) => o.id).sort(), 'exactly the transactions the API answers for this q');
  t.same(new Set(column(file, 'description')), new Set(Array.from({ length: 27 }, (_, i) => `Order ${i + 4}`)));
  t.same(new Set(column(file, 'status')), new Set(['processed']));
  t.same(urls.filter((url) => url.includes(exportShop)), [], 'the key is in no URL, the download\'s included');
  await page.close();
});

t.test('Download CSV over SETTLE_EXPORT_MAX_ROWS shows the API\'s error in the view and downloads nothing', async (t) => {
  const page = await browser.newPage();
  let downloads = 0;
  page.on('download', () => downloads++);
  await signIn(page, exportShop);
  await page.locator('tbody tr').first().waitFor();
  await page.getByRole('button', { name: 'Download CSV' }).click();
  const refused = await api.request('GET', '/transactions?format=csv', { key: exportShop });
  t.equal(refused.status, 400, 'the API refuses all 31 rows');
  const error = page.getByRole('main').getByRole('alert');
  await error.waitFor();
  t.ok((await error.textContent())?.includes(refused.body.error_description), 'the view shows the API\'s description');
  t.match(await error.textContent(), new RegExp(`More than ${EXPORT_MAX_ROWS} rows match`));
  t.ok(await page.getByRole('button', { name: 'Download CSV' }).isEnabled(), 'the button can be pressed again');
  t.equal(downloads, 0, 'nothing was downloaded');
  t.equal(await page.locator('tbody tr').count(), 25, 'the rows shown stay');
  await page.close();
});

t.test('Download CSV on every list view saves the rows the view shows, named after the view', async (t) => {
  const page = await browser.newPage();
  await signIn(page, api.key);
  const views = [['Transactions', 'transactions.csv'], ['Customers', 'customers.csv'], ['Events', 'events.csv'], ['Webhooks', 'webhooks.csv'], ['Invoices', 'invoices.csv'],
    ['Billing schedules', 'billing_schedules.csv'], ['Payment links', 'payment_links.csv'], ['Intents', 'intents.csv'], ['Processing accounts', 'processing_accounts.csv']];
  for (const [title, name] of views) {
    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: title, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: title, exact: true }).waitFor();
    await page.locator('.loading').waitFor({ state: 'detached' });
    const headings = await page.locator('thead th').allTextContents();
    const shown = headings.length ? await page.locator(`tbody td:nth-child(${headings.indexOf('Created') + 1})`).allTextContents() : [];
    const file = await downloadCsv(page);
    t.equal(file.name, name, `${title} saves ${name}`);
    t.equal(file.header[0], 'id', `${title}: a header of the fields`);
    t.same(column(file, 'created_at').sort(), shown.sort(), `${title}: the rows shown (${shown.length})`);
  }
  await page.close();
});

t.test('API data is shown as text: markup in a description is not run', async (t) => {
  const id = await pay(1, '<img src=x onerror="window.pwned=1">');
  const page = await browser.newPage();
  await signIn(page, api.key);
  await page.getByRole('link', { name: id }).waitFor();
  t.equal(await page.evaluate(() => (globalThis as { pwned?: unknown }).pwned), undefined);
  t.equal(await page.locator('td img').count(), 0);
  t.equal(await page.getByRole('cell', { name: '<img src=x onerror="window.pwned=1">' }).count(), 1, 'the markup shows as text');
  await page.close();
});

t.test('Next and Previous page through transactions 25 at a time, newest first', async (t) => {
  const key = await api.newKey('paging shop', 'test');
  for (let i = 1; i <= 27; i++) {
    const res = await api.request('POST', '/transactions', { key, json: { type: 'payment', amount: i, payment_method: CARD, description: `Order ${i}` } });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  }
  const page = await browser.newPage();
  await signIn(page, key);
  const rows = page.locator('tbody tr');
  await rows.first().waitFor();
  t.equal(await rows.count(), 25);
  t.match(await rows.first().textContent(), /Order 27/);
  t.ok(await page.getByRole('button', { name: 'Previous' }).isDisabled(), 'no page before the first');
  await page.getByRole('button', { name: 'Next' }).click();
  await page.getByText('26–27').waitFor();
  t.same(await rows.locator('td:nth-child(6)').allTextContents(), ['Order 2', 'Order 1'], 'the oldest two on the second page');
  t.ok(await page.getByRole('button', { name: 'Next' }).isDisabled(), 'no page after the last');
  await page.getByRole('button', { name: 'Previous' }).click();
  await page.getByText('1–25').waitFor();
  await page.close();
});

t.same([webhook.status, declined.status, refund.status], [200, 400, 200], 'the test data was made');

t.test('an object\'s page shows its history; Requests filters by path and opens a request with the changes it made', async (t) => {
  const renamed = await api.request('PUT', `/webhooks/${webhook.body.id}`, { json: { retries: 1 } });
  t.equal(renamed.status, 200, JSON.stringify(renamed.body));
  const page = await browser.newPage();
  await signIn(page, api.key);
  await page.goto(`${api.url}/console#/webhooks/${webhook.body.id}`);
  const history = page.locator('section', { has: page.getByRole('heading', { name: 'History' }) });
  await history.getByRole('cell', { name: /retries: 0 → 1/ }).waitFor();
  t.equal(await history.getByRole('cell', { name: /retries: 0 → 1/ }).count(), 1, 'what changed, before and after');
  t.equal(await history.getByRole('cell', { name: 'create', exact: true }).count(), 1, 'its making is there too');
  const requestId = renamed.headers.get('x-request-id')!;
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Requests', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Requests', exact: true }).waitFor();
  await typeInto(page.getByLabel('Filter (q)'), `method == "PUT" && path ? "/webhooks/*"`);
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.getByRole('link', { name: requestId }).click();
  await page.getByRole('heading', { level: 1, name: `Request ${requestId}` }).waitFor();
  const changes = page.locator('section', { has: page.getByRole('heading', { name: 'Changes it made' }) });
  await changes.getByRole('cell', { name: 'update' }).waitFor();
  t.match(await changes.textContent(), /retries: 0 → 1/);
  const byConsole = await api.request('GET', `/audit_events?request_id=${requestId}`);
  t.equal(byConsole.body.values[0].actor.type, 'secret_key', 'a change by a script is not the console\'s');
  await page.close();
});
