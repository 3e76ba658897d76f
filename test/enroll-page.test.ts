/**
 * The hosted enrollment page `/enroll/<id>`: a plain form, no key needed; completing it creates
 * the account and its payout method and finishes the link; errors sit beside their inputs; used,
 * expired and unknown links get clear pages.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';

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
