/**
 * The console's webhook health in a real browser against the real web and worker: a webhook a 410
 * disabled shows its status, reason and failure streak; "Enable and deliver what was missed"
 * enables it and the receiver gets exactly the events it missed; "Rotate secret" shows a new
 * secret once, which signs the next delivery.
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import { serviceSignature } from '../api/webhooks/signature.ts';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { enter, launchBrowser } from './helpers/browser.ts';
import { startReceiver } from './helpers/receiver.ts';
import { eventually } from './helpers/wait.ts';

const api = await startTestApi(t);
await startTestWorker(t, api.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: 'true', WORKER_POLL_INTERVAL: '50' });
const browser = await launchBrowser(t);

async function openWebhook(page: Page, id: string): Promise<void> {
  await page.goto(`${api.url}/console`);
  await enter(page, page.getByLabel('Secret key'), api.key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Webhooks', exact: true }).click();
  await page.getByRole('link', { name: id }).click();
}

async function newAccount(name: string): Promise<string> {
  const account = (await api.request('POST', '/processing_accounts', { json: { name } })).body;
  return (await api.db('events').where({ object_id: account.id }).first()).id;
}

t.test('a disabled webhook\'s health, then "Enable and deliver what was missed" and "Rotate secret"', async (t) => {
  const receiver = await startReceiver(t);
  receiver.respond = (_r, index) => ({ status: index === 0 ? 410 : 200 });
  const hook = (await api.request('POST', '/webhooks', { json: { trigger: 'processing_status', url: `${receiver.url}/console` } })).body;
  const gone = await newAccount('Gone');
  await eventually(() => api.request('GET', `/webhooks/${hook.id}`), (r) => r.body.status === 'disabled');
  // The event the 410 answered was not delivered either: it is missed with the two skipped ones.
  const missed = [gone, await newAccount('Missed 1'), await newAccount('Missed 2')];
  await eventually(() => api.db('webhook_deliveries').where({ webhook_id: hook.id, state: 'skipped' }), (rows: unknown[]) => rows.length === 2);

  const page = await browser.newPage();
  await openWebhook(page, hook.id);
  const healthSection = page.locator('section').filter({ has: page.getByRole('heading', { name: 'Health' }) });
  await healthSection.getByText('The receiver answered 410 Gone').waitFor();
  t.match(await healthSection.textContent(), /disabled/);
  t.match(await healthSection.textContent(), /1 failed attempts since the last success/, 'the failure streak');
  await page.getByText('Skipped (the webhook was disabled; not sent)').first().waitFor();

  await page.getByRole('button', { name: 'Enable and deliver what was missed' }).click();
  t.match(await page.getByRole('dialog', { name: 'Enable this webhook?' }).textContent(), new RegExp(`Enable ${hook.id}`), 'asked first, naming the webhook');
  await page.getByRole('dialog').getByRole('button', { name: 'Enable and deliver' }).click();
  await page.getByText('Enabled. 3 missed events on the way, oldest first.').waitFor();
  const got = await receiver.waitFor(4);
  t.same(got.slice(1).map((r) => r.headers['x-service-event-id']).sort(), [...missed].sort(), 'exactly the missed events arrived');
  t.equal((await api.request('GET', `/webhooks/${hook.id}`)).body.status, 'active');
  t.equal(await page.getByRole('button', { name: 'Enable and deliver what was missed' }).count(), 0, 'no longer offered once active');

  await page.getByRole('button', { name: 'Rotate secret' }).click();
  await page.getByRole('dialog', { name: 'Rotate the signing secret?' }).getByRole('button', { name: 'Rotate secret' }).click();
  await page.locator('code.secret').waitFor();
  const secret = (await page.locator('code.secret').textContent()) ?? '';
  t.match(secret, /^whsec_/, 'the new secret is shown');
  await newAccount('Signed anew');
  const signed = (await receiver.waitFor(5))[4];
  t.equal(signed.headers['x-service-signature'], serviceSignature(secret, signed.body), 'the secret shown signs the next delivery');
  t.equal(signed.headers['webhook-signature']?.toString().split(' ').length, 2, 'the old secret still signs beside it');
  await page.reload();
  await page.getByRole('heading', { name: 'Health' }).waitFor();
  await page.getByText(/still signs until/).waitFor();
  t.equal(await page.getByText(secret).count(), 0, 'the secret is not shown again');
  await page.close();
});
