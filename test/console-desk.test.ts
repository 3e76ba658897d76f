/**
 * The console as an operator's desk (CONTRACT §25), in a real browser against the real web and
 * reporting processes: finding customers and transactions by typing, a customer's page, refunds,
 * captures and voids behind a confirmation (audited as the console), a payment link made and its
 * URL copied, webhooks added, disabled and enabled, and the Reports view's numbers against the
 * API's own aggregates. A person's keys and clicks only; the tests read what the page shows and
 * what the API then answers.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import type { Page } from 'playwright-core';
import { startTestApi } from './helpers/api.ts';
import { launchBrowser, screenshot } from './helpers/browser.ts';
import { parseCsv } from './helpers/csv.ts';
import { signInToConsole, typeInto } from './helpers/consoleSession.ts';
import { eventually } from './helpers/wait.ts';
import { reportingFirst } from './reporting-support.ts';

const { databaseUrl, webEnv } = await reportingFirst(t);
const api = await startTestApi(t, webEnv, {}, databaseUrl);
const browser = await launchBrowser(t);

const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };
const BANK = { type: 'bank_account', bank_account: { account_number: '000123456789', routing_number: '110000000', account_type: 'checking' } };

async function made(path: string, json: unknown, key = api.key): Promise<any> {
  const res = await api.request('POST', path, { key, json });
  if (res.status !== 200) throw new Error(`${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}

const ann = await made('/customers', { name: 'Ann Buyer', email: 'ann@example.com' });
const annCard = await made('/payment_methods', { ...CARD, customer_id: ann.id });
const mug = await made('/transactions', { type: 'payment', amount: 12.5, payment_method_id: annCard.id, order_number: 'A-1001', description: 'Blue mug' });
const annInvoice = await made('/invoices', { customer_id: ann.id, due_date: '2026-12-01', items: [{ entry_type: 'charge', amount: 20 }] });
const annLink = await made('/payment_links', { type: 'one_time', description: 'Mug deposit', amount: 5, customer_id: ann.id });
const bob = await made('/customers', { name: 'Bob Smith', email: 'bob@example.org' });
const kettle = await made('/transactions', { type: 'payment', amount: 31, customer_id: bob.id, payment_method: BANK, description: 'Cast iron kettle' });
const teapot = await made('/transactions', { type: 'payment', amount: 18, payment_method: CARD, description: 'Green teapot', order_number: 'B-77' });

const rollShop = await api.newKey('Roll shop', 'test');
/**
 * A shop of its own for the Reports view: payments made now (created_at is the database's clock,
 * which no API moves), processed and declined, and a refund.
 */
const booksShop = await api.newKey('Books shop', 'test');
for (const [amount, number] of [[10, CARD.card.card_number], [5.25, CARD.card.card_number], [20, CARD.card.card_number], [40, '4111 1111 1111 9903'], [11.11, CARD.card.card_number]] as const) {
  await api.request('POST', '/transactions', { key: booksShop, json: { type: 'payment', amount, payment_method: { type: 'card', card: { card_number: number, expiry: '12/35' } } } });
}
const DAY_MS = 86_400_000;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** The range the report tests ask for: nine days back to tomorrow, so a run across midnight still holds today. */
const TODAY = dayOf(Date.now());
const FROM = dayOf(Date.now() - 9 * DAY_MS);
const TO = dayOf(Date.now() + DAY_MS);

const signIn = (page: Page, key = api.key) => signInToConsole(page, api.url, key);

const search = (page: Page) => page.getByRole('searchbox', { name: 'Search customers and transactions' });
const results = (page: Page) => page.getByRole('region', { name: 'Search results' });
const section = (page: Page, name: string) => page.locator('section').filter({ has: page.getByRole('heading', { name, exact: true }) });

async function auditOf(id: string): Promise<Array<{ action: string; actor: { type: string }; object_id: string }>> {
  const res = await api.request('GET', `/audit_events?object_id=${id}&order_by=desc(created_at)`);
  return res.body.values;
}

t.test('the search box answers as an operator types: a name, an e-mail, the last four digits, an amount, an order number', async (t) => {
  const page = await browser.newPage();
  await signIn(page);
  const found = results(page);

  await search(page).pressSequentially('ann');
  await found.getByText('Found for “ann”:').waitFor();
  await found.getByRole('link', { name: /Ann Buyer/ }).waitFor();
  t.equal(await found.getByRole('link', { name: /Blue mug/ }).count(), 1, 'her payment, made with the card she keeps');
  t.equal(await found.getByRole('link', { name: /Bob Smith/ }).count(), 0);
  await screenshot(page, 'console-search.png');

  await typeInto(search(page), 'bob@example');
  await found.getByText('Found for “bob@example”:').waitFor();
  await found.getByRole('link', { name: /Bob Smith/ }).waitFor();
  t.equal(await found.getByRole('link', { name: /Cast iron kettle/ }).count(), 1, 'his payment');
  t.equal(await found.getByRole('link', { name: /Ann Buyer/ }).count(), 0, 'the old answer is gone');

  await typeInto(search(page), '6789');
  await found.getByText('Found for “6789”:').waitFor();
  await found.getByRole('link', { name: /Cast iron kettle/ }).waitFor();
  t.equal(await found.getByRole('link').count(), 1, 'only the payment from the account ending 6789');

  await typeInto(search(page), '12.50');
  await found.getByText('Found for “12.50”:').waitFor();
  await found.getByRole('link', { name: /Blue mug/ }).waitFor();
  t.equal(await found.getByRole('link').count(), 1, 'only the payment of 12.50');

  await typeInto(search(page), 'b-77');
  await found.getByText('Found for “b-77”:').waitFor();
  await found.getByRole('link', { name: /Green teapot/ }).waitFor();
  t.match(await found.textContent(), /order B-77/);

  await typeInto(search(page), teapot.id);
  await found.getByText(`Found for “${teapot.id}”:`).waitFor();
  t.same(await found.getByRole('link').allTextContents(), [`18.00 USD payment processedGreen teapot · order B-77 · …4242${teapot.id} · ${teapot.created_at}`], 'a transaction by its id');
  await typeInto(search(page), bob.id);
  await found.getByText(`Found for “${bob.id}”:`).waitFor();
  t.equal(await found.getByRole('link', { name: /Bob Smith/ }).count(), 1, 'a customer by id');

  await typeInto(search(page), 'nobody-at-all');
  await found.getByText('Nothing found for “nobody-at-all”.').waitFor();

  await typeInto(search(page), '4242');
  await found.getByText('Found for “4242”:').waitFor();
  await found.getByRole('link', { name: /Green teapot/ }).waitFor();
  t.equal(await found.getByRole('link').count(), 2, 'both card payments, not the bank one');
  await search(page).press('ArrowDown');
  await search(page).press('Escape');
  t.ok(await found.isHidden(), 'Escape closes the answers');
  await page.close();
});

t.test('with the keyboard alone: "/" to search, type, arrow to a customer, Enter opens the page with her methods, transactions and invoices', async (t) => {
  const page = await browser.newPage();
  await signIn(page);
  await page.locator('tbody tr').first().waitFor();
  await page.keyboard.press('/');
  await page.keyboard.type('ann@');
  await results(page).getByRole('link', { name: /Ann Buyer/ }).waitFor();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { level: 1, name: `Customer ${ann.id}` }).waitFor();
  t.ok(await results(page).isHidden(), 'the answers close once one is followed');
  await section(page, 'Payment methods').getByRole('cell', { name: /visa 4242/ }).waitFor();
  await section(page, 'Transactions').getByRole('link', { name: mug.id }).waitFor();
  t.match(await section(page, 'Transactions').textContent(), /Blue mug/);
  await section(page, 'Invoices').getByRole('link', { name: annInvoice.id }).waitFor();
  t.match(await section(page, 'Invoices').textContent(), /20\.00/);
  await page.close();
});

t.test('Customers lists the customers, newest first, each opening its page', async (t) => {
  const page = await browser.newPage();
  await signIn(page);
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Customers', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Customers' }).waitFor();
  const rows = page.locator('tbody tr');
  await rows.first().waitFor();
  t.same((await rows.allTextContents()).map((row) => /Ann Buyer|Bob Smith/.exec(row)?.[0]), ['Bob Smith', 'Ann Buyer']);
  await page.getByRole('link', { name: bob.id }).click();
  await section(page, 'Transactions').getByRole('link', { name: kettle.id }).waitFor();
  // The bank account he paid with is his, kept on file.
  await section(page, 'Payment methods').getByRole('cell', { name: 'checking account 6789' }).waitFor();
  const kept = await api.request('GET', `/payment_methods?customer_id=${bob.id}`);
  t.same(kept.body.values.map((m: { bank_account: { account_number: string } }) => m.bank_account.account_number.slice(-4)), ['6789']);
  await page.close();
});

t.test('a part refund from the console: the confirmation names amount and payment, the API has it, the audit says console', async (t) => {
  const page = await browser.newPage();
  await signIn(page);
  await search(page).pressSequentially('teapot');
  await results(page).getByRole('link', { name: /Green teapot/ }).click();
  await page.getByText('Refundable: 18.00 USD of 18.00 USD.').waitFor();

  // Cancel first: nothing changes.
  await typeInto(page.getByLabel('Refund amount (USD)'), '5');
  await page.getByRole('button', { name: 'Refund…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Refund this payment?' });
  await dialog.waitFor();
  await screenshot(page, 'console-refund-confirm.png');
  t.match(await dialog.textContent(), new RegExp(`Refund 5\\.00 USD of ${teapot.id} \\(“Green teapot”\\) — part of the remaining 18\\.00 USD`));
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
  const refundsOf = async () => (await api.request('GET', `/transfers?assoc_transaction_id=${teapot.id}`)).body.values;
  t.same(await refundsOf(), [], 'no refund after Cancel');

  await page.getByRole('button', { name: 'Refund…' }).click();
  await dialog.getByRole('button', { name: 'Refund 5.00 USD' }).click();
  await page.getByText('Refundable: 13.00 USD of 18.00 USD.').waitFor();
  const said = page.getByRole('status').filter({ hasText: 'Refunded 5.00 USD' });
  await said.waitFor();
  const refundId = (await said.getByRole('link').textContent())!;
  const refund = await api.request('GET', `/transactions/${refundId}`);
  t.match(refund.body, { type: 'refund', amount: 5, status: 'processed' }, 'the API has the refund');
  t.same((await refundsOf()).map((e: { transaction_id: string; amount: number }) => [e.transaction_id, Math.abs(e.amount)]), [[refundId, 5]], 'against the teapot');
  const [created] = await auditOf(refundId);
  t.match(created, { action: 'create', actor: { type: 'console' } }, 'audited as the console');
  await said.getByRole('link').click();
  const history = section(page, 'History');
  await history.getByRole('cell', { name: /^console test_secret_key_/ }).waitFor();
  t.equal(await history.getByRole('cell', { name: 'create', exact: true }).count(), 1, 'the refund\'s page shows who made it: the console');
  await page.goBack();
  await page.getByText('Refundable: 13.00 USD of 18.00 USD.').waitFor();

  // More than remains: the API refuses and says why, where the refund was asked.
  await typeInto(page.getByLabel('Refund amount (USD)'), '20');
  await page.getByRole('button', { name: 'Refund…' }).click();
  await dialog.getByRole('button', { name: 'Refund 20.00 USD' }).click();
  const refused = page.getByRole('alert');
  await refused.waitFor();
  t.match(await refused.textContent(), /InvalidAttributes: amount — amount: Refunds of txn_\w+ may total at most its processed amount; 13\.00 remains/);
  t.equal((await refundsOf()).length, 1, 'still one refund');

  // The rest: the field offers exactly what remains.
  await page.reload();
  await page.getByText('Refundable: 13.00 USD of 18.00 USD.').waitFor();
  t.equal(await page.getByLabel('Refund amount (USD)').inputValue(), '13.00');
  await page.getByRole('button', { name: 'Refund…' }).click();
  t.match(await dialog.textContent(), /the whole remaining amount/);
  await dialog.getByRole('button', { name: 'Refund 13.00 USD' }).click();
  await page.getByText('Refundable: 0.00 USD of 18.00 USD.').waitFor();
  t.equal(await page.getByRole('button', { name: 'Refund…' }).count(), 0, 'nothing left to refund');
  await page.close();
});

t.test('a refund with the keyboard alone: search, Enter, Tab to the amount, Enter, Tab to confirm, Enter', async (t) => {
  const page = await browser.newPage();
  await signIn(page);
  await page.locator('tbody tr').first().waitFor();
  await page.keyboard.press('/');
  await page.keyboard.type('A-1001');
  await results(page).getByText('Found for “A-1001”:').waitFor();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.getByText('Refundable: 12.50 USD of 12.50 USD.').waitFor();
  const amount = page.getByLabel('Refund amount (USD)');
  for (let presses = 0; presses < 40 && !(await amount.evaluate((input) => input === input.ownerDocument.activeElement)); presses++) await page.keyboard.press('Tab');
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.type('2.5');
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'Refund this payment?' });
  await dialog.waitFor();
  t.ok(await dialog.getByRole('button', { name: 'Cancel' }).evaluate((button) => button === button.ownerDocument.activeElement), 'Cancel has the focus: a stray Enter changes nothing');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Enter');
  await page.getByText('Refundable: 10.00 USD of 12.50 USD.').waitFor();
  const refunds = (await api.request('GET', `/transfers?assoc_transaction_id=${mug.id}`)).body.values;
  t.same(refunds.map((e: { amount: number }) => Math.abs(e.amount)), [2.5], 'the API has the refund of 2.50');
  await page.close();
});

t.test('capture and void an authorization from its page, each confirmed, audited as the console', async (t) => {
  const toCapture = await made('/transactions', { type: 'payment', amount: 40, status: 'authorized', payment_method: CARD, description: 'Held order' });
  const toVoid = await made('/transactions', { type: 'payment', amount: 15, status: 'authorized', payment_method: CARD, description: 'Cancelled order' });
  const page = await browser.newPage();
  await signIn(page);
  await page.goto(`${api.url}/console#/transactions/${toCapture.id}`);
  await page.getByRole('button', { name: 'Capture 40.00 USD…' }).click();
  const dialog = page.getByRole('dialog');
  t.match(await dialog.textContent(), new RegExp(`Capture 40\\.00 USD of ${toCapture.id} \\(“Held order”\\)`));
  await dialog.getByRole('button', { name: 'Capture 40.00 USD' }).click();
  await page.getByRole('status').filter({ hasText: 'Captured 40.00 USD.' }).waitFor();
  t.equal((await api.request('GET', `/transactions/${toCapture.id}`)).body.status, 'processed');
  t.match((await auditOf(toCapture.id))[0], { action: 'capture', actor: { type: 'console' } });
  await page.getByText('Refundable: 40.00 USD of 40.00 USD.').waitFor();

  await page.goto(`${api.url}/console#/transactions/${toVoid.id}`);
  await page.getByRole('button', { name: 'Void 15.00 USD…' }).click();
  t.match(await dialog.textContent(), new RegExp(`Void 15\\.00 USD of ${toVoid.id} \\(“Cancelled order”\\)`));
  await dialog.getByRole('button', { name: 'Void 15.00 USD' }).click();
  await page.getByRole('status').filter({ hasText: 'Voided 15.00 USD.' }).waitFor();
  t.equal((await api.request('GET', `/transactions/${toVoid.id}`)).body.status, 'voided');
  t.match((await auditOf(toVoid.id))[0], { action: 'void', actor: { type: 'console' } });
  await page.getByText('Nothing to do with a voided payment.').waitFor();
  await page.close();
});

t.test('a payment link made from a customer\'s page, confirmed, and its URL copied and pasted', async (t) => {
  await browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: api.url });
  const page = await browser.newPage();
  await signIn(page);
  await page.goto(`${api.url}/console#/customers/${ann.id}`);
  await page.getByRole('link', { name: 'New payment link for this customer' }).click();
  t.equal(await page.getByLabel('Customer id (optional)').inputValue(), ann.id, 'the customer is filled in');
  await typeInto(page.getByLabel('Amount (USD)'), '25');
  await typeInto(page.getByLabel('Description'), 'Gift card');
  await page.getByRole('button', { name: 'Create payment link…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Create this payment link?' });
  t.match(await dialog.textContent(), new RegExp(`A payment link for 25\\.00 USD, “Gift card” for customer ${ann.id}\\.`));
  await dialog.getByRole('button', { name: 'Create link for 25.00 USD' }).click();
  await page.getByRole('button', { name: 'Copy URL' }).click();
  await page.getByText('Copied.').waitFor();
  const id = (await page.getByRole('status').filter({ hasText: 'Payment link' }).getByRole('link').textContent())!;
  const link = (await api.request('GET', `/payment_links/${id}`)).body;
  t.match(link, { amount: 25, description: 'Gift card', customer_id: ann.id, status: 'active' });
  await search(page).click();
  await search(page).press('ControlOrMeta+V');
  t.equal(await search(page).inputValue(), link.url, 'the link\'s URL was on the clipboard');
  t.match((await auditOf(id))[0], { action: 'create', actor: { type: 'console' } });

  // A refusal shows the API's message under the form.
  await typeInto(page.getByLabel('Customer id (optional)'), 'acct_nobody');
  await page.getByRole('button', { name: 'Create payment link…' }).click();
  await dialog.getByRole('button', { name: 'Create link for 25.00 USD' }).click();
  await page.getByRole('alert').filter({ hasText: 'customer_id' }).waitFor();
  await page.close();
});

t.test('a webhook added, disabled and enabled from the console, each confirmed and audited as the console', async (t) => {
  const page = await browser.newPage();
  await signIn(page);
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Webhooks', exact: true }).click();
  await typeInto(page.getByLabel('Trigger'), 'no_such_trigger');
  await typeInto(page.getByLabel('URL'), 'https://example.com/hooks');
  await page.getByRole('button', { name: 'Add webhook…' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Add webhook' }).click();
  await page.getByRole('alert').filter({ hasText: 'trigger' }).waitFor();

  await typeInto(page.getByLabel('Trigger'), 'refund');
  await page.getByRole('button', { name: 'Add webhook…' }).click();
  t.match(await page.getByRole('dialog').textContent(), /Send every “refund” event to https:\/\/example\.com\/hooks\./);
  await page.getByRole('dialog').getByRole('button', { name: 'Add webhook' }).click();
  await page.waitForURL(/#\/webhooks\/wh_/);
  const id = page.url().split('/').pop()!;
  t.match((await api.request('GET', `/webhooks/${id}`)).body, { trigger: 'refund', url: 'https://example.com/hooks', status: 'active' });

  await page.getByRole('button', { name: 'Disable…' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Disable webhook' }).click();
  await page.getByRole('button', { name: 'Enable and deliver what was missed' }).waitFor();
  t.equal((await api.request('GET', `/webhooks/${id}`)).body.status, 'disabled');
  t.equal((await auditOf(id))[0].actor.type, 'console');

  await page.getByRole('button', { name: 'Enable and deliver what was missed' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Enable and deliver' }).click();
  await page.getByRole('button', { name: 'Disable…' }).waitFor();
  t.equal((await api.request('GET', `/webhooks/${id}`)).body.status, 'active');
  t.same((await auditOf(id)).map((e) => e.actor.type), ['console', 'console', 'console'], 'made, disabled and enabled by the console');
  await page.close();
});

/** The table the Reports view shows: its header and rows of cells. */
async function reportTable(page: Page): Promise<{ header: string[]; rows: string[][] }> {
  const table = page.locator('.report-data table');
  await table.waitFor();
  const header = await table.locator('thead th').allTextContents();
  const rows = [];
  for (const row of await table.locator('tbody tr').all()) rows.push(await row.locator('td').allTextContents());
  return { header, rows };
}

async function setDate(page: Page, label: string, day: string): Promise<void> {
  const [year, month, date] = day.split('-');
  // Focused as Tab does, on its first part; it takes its parts in the browser's order (en-US: month, day, year).
  await page.getByLabel(label, { exact: true }).focus();
  await page.getByLabel(label, { exact: true }).pressSequentially(`${month}${date}${year}`);
}

t.test('Roll key: confirmed, the new key shown once to copy, this tab goes on with it, the old one stops, audited as the console', async (t) => {
  const page = await browser.newPage();
  await signIn(page, rollShop);
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'API key', exact: true }).click();
  await page.getByLabel('After rolling, the current key').selectOption('stops at once');
  await page.getByRole('button', { name: 'Roll key…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Roll this key?' });
  t.match(await dialog.textContent(), new RegExp(`Roll ${rollShop.slice(0, -24)}…: a new key with the same access is made and shown once; this one stops at once\\.`));
  await dialog.getByRole('button', { name: 'Roll key' }).click();
  const shown = page.getByLabel('new key', { exact: true });
  await shown.waitFor();
  const fresh = await shown.inputValue();
  t.match(fresh, /^test_secret_key_[A-Za-z0-9]{32}$/);
  t.equal((await api.request('GET', '/customers', { key: rollShop })).status, 401, 'the old key stopped');
  t.equal((await api.request('GET', '/customers', { key: fresh })).status, 200, 'the new one works');
  const audit = await api.request('GET', '/audit_events?object_type=api_key', { key: fresh });
  const events = audit.body.values as Array<{ actor: { type: string }; object_id: string }>;
  const byConsole = events.filter((e) => e.actor.type === 'console');
  t.equal(new Set(byConsole.map((e) => e.object_id)).size, 2, 'the new key made and the old one ended, by the console');
  t.same(events.filter((e) => e.actor.type !== 'console').map((e) => e.actor.type), ['system'], 'besides the old key\'s making by this test\'s setup');

  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Customers', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Customers' }).waitFor();
  await page.getByText('Nothing here yet.').waitFor();
  t.equal(await page.getByLabel('Secret key').count(), 0, 'still signed in, with the new key');
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'API key', exact: true }).click();
  await page.getByText(`Signed in with ${fresh.slice(0, -24)}…`).waitFor();
  t.equal(await page.getByLabel('new key', { exact: true }).count(), 0, 'the new key is not shown again');
  await page.close();
});

/** The API's aggregate of the books shop's transactions by day and status, from `from` up to (not including) `until`. */
async function aggregate(from: string, until: string): Promise<Array<Record<string, any>>> {
  const res = await api.request('GET', `/transactions?${new URLSearchParams({
    fields: 'date(created_at),status,sum(amount),count', group_by: 'date(created_at),status', q: `created_at >= date(${from}) && created_at < date(${until})`,
  })}`, { key: booksShop });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body.values;
}

const cents = (rows: Array<Record<string, any>>) => rows.reduce((sum, row) => sum + Math.round(row['sum(amount)'] * 100), 0);
const moneyText = (c: number) => (c / 100).toFixed(2);

t.test('Reports by day split by status: every number equals the API\'s aggregate for the range, and the previous period\'s too', async (t) => {
  const page = await browser.newPage();
  await page.setViewportSize({ width: 1280, height: 900 });
  await signIn(page, booksShop);
  // Which table of the reporting process answered each of the page's aggregates (its Server-Timing).
  const answered: string[] = [];
  page.on('response', (response) => {
    const timing = /clickhouse;dur=[\d.]+;desc="([^"]*)"/.exec(response.headers()['server-timing'] ?? '');
    if (timing && new URL(response.url()).pathname === '/transactions') answered.push(timing[1]);
  });
  await page.getByRole('link', { name: 'Reports' }).click();
  await setDate(page, 'From', FROM);
  await setDate(page, 'To', TO);
  await page.getByLabel('By', { exact: true }).selectOption('day');
  await page.getByLabel('Measure', { exact: true }).selectOption('Volume (sum of amounts)');
  await page.getByLabel('Split by', { exact: true }).selectOption('Status');
  await page.getByRole('button', { name: 'Show' }).click();
  await page.getByRole('img', { name: `Volume by day, split by status, ${FROM} to ${TO}` }).waitFor();
  const shown = await reportTable(page);
  t.same(shown.header, ['Period', 'processed', 'declined', 'Total', 'Previous period', 'Change']);

  const now = await aggregate(FROM, dayOf(Date.parse(TO) + DAY_MS));
  const before = await aggregate(dayOf(Date.parse(FROM) - 11 * DAY_MS), FROM);
  t.equal(shown.rows.length, 12, 'eleven days and the sum of all');
  for (const [label, processed, declined, total, previous] of shown.rows.slice(0, 11)) {
    const ofDay = now.filter((row) => row['date(created_at)'] === label);
    const previousDay = dayOf(Date.parse(label) - 11 * DAY_MS);
    t.same([processed, declined, total, previous], [
      moneyText(cents(ofDay.filter((row) => row.status === 'processed'))),
      moneyText(cents(ofDay.filter((row) => row.status === 'declined'))),
      moneyText(cents(ofDay)),
      moneyText(cents(before.filter((row) => row['date(created_at)'] === previousDay))),
    ], `${label} as the API aggregates it`);
  }
  t.same(shown.rows[11].slice(0, 5), ['All', '46.36', '40.00', '86.36', '0.00'], 'the books shop\'s payments, all of them today');
  t.match(await page.locator('#report-summary').textContent(), new RegExp(`Volume: 86\\.36 against 0\\.00 from ${dayOf(Date.parse(FROM) - 11 * DAY_MS)} to ${dayOf(Date.parse(FROM) - DAY_MS)}`));
  await screenshot(page, 'console-reports.png');
  t.ok(answered.length >= 2, 'the range and the previous period were asked of the reporting process');
  t.same([...new Set(answered)], ['rollup'], 'both answered from its rollup by day, not by reading every transaction');

  // The chart says the same: pointing at today shows its numbers in the legend.
  const plot = page.locator('.u-over');
  const box = (await plot.boundingBox())!;
  await page.mouse.move(box.x + (box.width * 9) / 10, box.y + box.height / 2);
  const legend = page.locator('.u-legend');
  await legend.getByText(TODAY).waitFor();
  t.same(await legend.locator('.u-series .u-value').allTextContents(), [TODAY, '46.36', '40.00', '0.00'], 'day, processed, declined, the day eleven days before');

  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
  t.equal(download.suggestedFilename(), `report-volume-by-day-${FROM}-to-${TO}.csv`);
  const [header, ...rows] = parseCsv(readFileSync(await download.path(), 'utf8'));
  t.same({ header, rows }, shown, 'the file is the table');
  await page.close();
});

t.test('Reports by month counts what the API\'s month aggregate counts, with the previous period beside it', async (t) => {
  const page = await browser.newPage();
  await signIn(page, booksShop);
  await page.getByRole('link', { name: 'Reports' }).click();
  const monthStart = `${TODAY.slice(0, 8)}01`;
  await setDate(page, 'From', monthStart);
  await setDate(page, 'To', TODAY);
  await page.getByLabel('By', { exact: true }).selectOption('month');
  await page.getByLabel('Measure', { exact: true }).selectOption('Number of transactions');
  await page.getByLabel('Split by', { exact: true }).selectOption('Nothing (total)');
  await page.getByRole('button', { name: 'Show' }).click();
  await page.getByRole('img', { name: `Number of transactions by month, ${monthStart} to ${TODAY}` }).waitFor();
  const months = (await api.request('GET', `/transactions?${new URLSearchParams({ fields: 'year(created_at),month(created_at),count', group_by: 'year(created_at),month(created_at)' })}`, { key: booksShop })).body.values;
  t.same(months.map((row: Record<string, number>) => [row['year(created_at)'], row['month(created_at)']]), [[Number(TODAY.slice(0, 4)), Number(TODAY.slice(5, 7))]]);
  t.same((await reportTable(page)).rows, [[TODAY.slice(0, 7), String(months[0].count), '0', '—'], ['All', String(months[0].count), '0', '—']]);

  await page.getByLabel('Split by', { exact: true }).selectOption('Processing account');
  await page.getByRole('button', { name: 'Show' }).click();
  await page.getByRole('img', { name: `Number of transactions by month, split by processing account, ${monthStart} to ${TODAY}` }).waitFor();
  const accounts = (await api.request('GET', '/processing_accounts', { key: booksShop })).body.values;
  t.equal(accounts.length, 1);
  const byAccount = await reportTable(page);
  t.same(byAccount.header, ['Period', `Books shop (…${accounts[0].id.slice(-6)})`, 'Total', 'Previous period', 'Change'], 'the account by its name');
  t.same(byAccount.rows[0].slice(0, 3), [TODAY.slice(0, 7), String(months[0].count), String(months[0].count)]);
  await page.getByLabel('Compare with the previous period').uncheck();
  await page.getByRole('button', { name: 'Show' }).click();
  await page.waitForURL(/compare=off/);
  await eventually(async () => (await reportTable(page)).header, (header) => !header.includes('Previous period'));
  t.same((await reportTable(page)).header, ['Period', `Books shop (…${accounts[0].id.slice(-6)})`, 'Total'], 'no previous period when not asked');
  await page.close();
});

t.test('nothing the console loads comes from another origin, the CSP stays strict, the charting library is served by Settle', async (t) => {
  const page = await browser.newPage();
  const requested: string[] = [];
  page.on('request', (request) => requested.push(request.url()));
  const violations: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  const response = await page.goto(`${api.url}/console`);
  t.match(response?.headers()['content-security-policy'], /default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'/);
  await typeInto(page.getByLabel('Secret key'), booksShop);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('link', { name: 'Reports' }).click();
  await page.locator('.u-over').waitFor();
  t.same(requested.filter((url) => new URL(url).origin !== api.url), [], 'every request stays on the service\'s origin');
  t.ok(requested.some((url) => url.endsWith('/uPlot.iife.min.js')), 'uPlot, from Settle');
  t.same(violations, [], 'nothing the CSP refused');
  await page.close();
});

/** Every view of the navigation, and the pages of the objects an operator acts on. */
const VIEWS = () => ['transactions', `transactions/${teapot.id}`, 'customers', `customers/${ann.id}`, 'events', 'webhooks', 'invoices', `invoices/${annInvoice.id}`,
  'billing_schedules', 'payment_links', `payment_links/${annLink.id}`, 'intents', 'processing_accounts', 'requests', 'reports', 'key'];

t.test('a 390-pixel phone: the test-mode badge stays in view while scrolling, and no view is wider than the screen', async (t) => {
  const page = await browser.newPage();
  await page.setViewportSize({ width: 390, height: 844 });
  await signIn(page);
  await search(page).pressSequentially('ann');
  await results(page).getByText('Found for “ann”:').waitFor();
  await screenshot(page, 'phone-search.png');
  for (const address of VIEWS()) {
    await page.goto(`${api.url}/console#/${address}`);
    await page.locator('main h1').waitFor();
    await eventually(() => page.locator('.loading').count(), (n) => n === 0);
    await screenshot(page, `phone-${address.split('/')[0]}${address.includes('/') ? '-page' : ''}.png`);
    const width = await page.locator('html').evaluate((html) => (html as unknown as { scrollWidth: number }).scrollWidth);
    t.ok(width <= 390, `${address} fits the screen (${width} px)`);
    await page.mouse.wheel(0, 2000);
    t.ok(await page.getByText('Test mode').isVisible(), `${address}: the test-mode badge is visible`);
    const badge = (await page.locator('#mode-badge').boundingBox())!;
    t.ok(badge.y >= 0 && badge.y < 844, `${address}: the badge is on screen after scrolling`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  for (const address of VIEWS()) {
    await page.goto(`${api.url}/console#/${address}`);
    await page.locator('main h1').waitFor();
    await eventually(() => page.locator('.loading').count(), (n) => n === 0);
    await screenshot(page, `desktop-${address.split('/')[0]}${address.includes('/') ? '-page' : ''}.png`);
    t.equal(await page.locator('main .error').count(), 0, `${address} at desktop width shows no error`);
  }
  await page.close();
});
