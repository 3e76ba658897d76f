/**
 * Card testing through public pages (CONTRACT §23), as a browser's requests: a payment link's page
 * viewed, then paid with the token it carries. At most 10 declined attempts per client address and
 * per payment link within a minute; the next attempt is 429 TooManyRequests with Retry-After and
 * its card never reaches the processor (the processor seam counts what it is asked). Repeated
 * views by one visitor reuse a live token; a link keeps at most 5 usable tokens. Client tokens and
 * page requests are rate limited by token and by address like keys; X-Forwarded-For names the
 * address only behind a proxy the operator trusts (SETTLE_TRUST_PROXY). Time moves by the clock
 * seam, never by sleeping. The counts are in the database: two web processes share them, and a
 * restarted one keeps them.
 */
import t from 'tap';
import { sandboxProcessor } from '../api/families/transactions/sandbox.ts';
import type { PaymentProcessor } from '../api/processor.ts';
import { startTestApi, type TestApi } from './helpers/api.ts';
import { movableClock } from './helpers/seams.ts';

/** The sandbox, counting the cards it is asked about. */
function countingProcessor(): { processor: PaymentProcessor; asked: () => number } {
  let asked = 0;
  return {
    processor: { ...sandboxProcessor, authorizeCard: (number) => (asked++, sandboxProcessor.authorizeCard(number)) },
    asked: () => asked,
  };
}

const DECLINED = { card_number: '4111111111119905', expiry: '12/35', card_code: '000' }; // invalid_card_code
const APPROVED = { card_number: '4242424242424242', expiry: '12/35', card_code: '123' };

interface Visitor {
  /** the page of a link as this visitor's browser loads it: status and the token it carries */
  view: (linkId: string) => Promise<{ status: number; token: string | undefined; headers: Headers }>;
  /** what the page's script posts when the visitor presses Pay */
  pay: (linkId: string, token: string, card: typeof DECLINED) => Promise<{ status: number; body: any; headers: Headers }>;
}

function visitor(api: TestApi, address?: string): Visitor {
  const forwarded: Record<string, string> = address ? { 'X-Forwarded-For': address } : {};
  return {
    view: async (linkId) => {
      const res = await fetch(`${api.url}/pay/${linkId}`, { headers: forwarded });
      const html = await res.text();
      return { status: res.status, token: /(test_client_key_[0-9A-Za-z]+)/.exec(html)?.[1], headers: res.headers };
    },
    pay: async (linkId, token, card) => {
      const res = await fetch(`${api.url}/transactions`, {
        method: 'POST',
        headers: { ...forwarded, Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ type: 'payment', payment_link_id: linkId, payment_method: { type: 'card', card } }),
      });
      return { status: res.status, body: await res.json(), headers: res.headers };
    },
  };
}

async function newLink(api: TestApi, type = 'one_time'): Promise<string> {
  const res = await api.request('POST', '/payment_links', { json: { type, description: 'Order', amount: 10 } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

/** Views the page, then pays with the token it carries. */
async function attempt(who: Visitor, linkId: string, card = DECLINED) {
  const page = await who.view(linkId);
  if (page.status === 429) return { status: 429, body: null, headers: page.headers };
  return who.pay(linkId, page.token!, card);
}

async function usableTokens(api: TestApi, linkId: string): Promise<number> {
  const [row] = await api.db.raw(`select count(*)::int as n from access_tokens where payment_link_id = ? and status = 'active' and uses = 0 and expires_at > now()`, [linkId]).then((r: any) => r.rows);
  return row.n;
}

t.test('one client address: 10 declines within a minute, then 429 with Retry-After that never reaches the processor', async (t) => {
  const counting = countingProcessor();
  const clock = movableClock();
  const api = await startTestApi(t, { SETTLE_TRUST_PROXY: 'true' }, { processor: counting.processor, clock: clock.clock });
  const tester = visitor(api, '203.0.113.7');
  for (let i = 0; i < 10; i++) {
    const res = await attempt(tester, await newLink(api));
    t.match(res, { status: 400, body: { error_type: 'TransactionDeclined' } }, `decline ${i + 1} answers its reason`);
  }
  t.equal(counting.asked(), 10, 'ten cards reached the processor');
  const link = await newLink(api);
  const refused = await attempt(tester, link);
  t.match(refused, { status: 429, body: { object: 'error', error_type: 'TooManyRequests' } }, 'the eleventh attempt is refused');
  t.ok(Number(refused.headers.get('Retry-After')) >= 1 && Number(refused.headers.get('Retry-After')) <= 60, `Retry-After within the minute: ${refused.headers.get('Retry-After')}`);
  t.match(await attempt(tester, link, APPROVED), { status: 429 }, 'a good card too, from that address');
  t.equal(counting.asked(), 10, 'neither card reached the processor');
  t.equal((await api.db('transactions').whereRaw(`data->>'payment_link_id' = ?`, [link])).length, 0, 'and no transaction was stored');

  const other = await attempt(visitor(api, '198.51.100.4'), link, APPROVED);
  t.equal(other.status, 200, 'another address pays the same link');
  t.equal(counting.asked(), 11);

  clock.advance(Number(refused.headers.get('Retry-After')) * 1000);
  t.match(await attempt(tester, await newLink(api)), { status: 400, body: { error_type: 'TransactionDeclined' } }, 'after Retry-After the address may try again');
});

t.test('a burst of 25 concurrent attempts from one address: only 10 cards reach the processor', async (t) => {
  const counting = countingProcessor();
  const api = await startTestApi(t, { SETTLE_TRUST_PROXY: 'true' }, { processor: counting.processor });
  const tester = visitor(api, '203.0.113.99');
  const ready: Array<[string, string]> = [];
  for (let i = 0; i < 25; i++) {
    const link = await newLink(api);
    ready.push([link, (await tester.view(link)).token!]);
  }
  const answers = await Promise.all(ready.map(([link, token]) => tester.pay(link, token, DECLINED)));
  t.equal(counting.asked(), 10, 'ten cards reached the processor');
  t.equal(answers.filter((a) => a.status === 400 && a.body.error_type === 'TransactionDeclined').length, 10, 'ten declines');
  t.equal(answers.filter((a) => a.status === 429).length, 15, 'the rest refused before the processor');
});

t.test('one payment link: 10 declines from any addresses within a minute, then every attempt through it is 429', async (t) => {
  const counting = countingProcessor();
  const clock = movableClock();
  const api = await startTestApi(t, { SETTLE_TRUST_PROXY: 'true' }, { processor: counting.processor, clock: clock.clock });
  const link = await newLink(api, 'reusable');
  for (let i = 0; i < 10; i++) t.match(await attempt(visitor(api, `192.0.2.${i + 1}`), link), { status: 400 }, `decline ${i + 1} from its own address`);
  const refused = await attempt(visitor(api, '192.0.2.200'), link, APPROVED);
  t.match(refused, { status: 429, body: { error_type: 'TooManyRequests' } }, 'a fresh address is refused through this link');
  t.match(refused.headers.get('Retry-After'), /^\d+$/);
  t.equal(counting.asked(), 10, 'the refused card never reached the processor');

  // The token the page gave names its link: leaving payment_link_id out of the body counts the same.
  const page = await visitor(api, '192.0.2.201').view(link);
  const res = await fetch(`${api.url}/transactions`, {
    method: 'POST',
    headers: { 'X-Forwarded-For': '192.0.2.201', Authorization: `Bearer ${page.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ type: 'payment', amount: 10, payment_method: { type: 'card', card: APPROVED } }),
  });
  t.equal(res.status, 429, 'the link\'s token without payment_link_id is refused too');
  t.equal(counting.asked(), 10);

  t.equal((await attempt(visitor(api, '192.0.2.202'), await newLink(api), APPROVED)).status, 200, 'another link is open');
  clock.advance(61_000);
  t.equal((await attempt(visitor(api, '192.0.2.203'), link, APPROVED)).status, 200, 'a minute later the link pays again');
});

t.test('without SETTLE_TRUST_PROXY, X-Forwarded-For is ignored: rotating it does not escape the address limit', async (t) => {
  const counting = countingProcessor();
  const api = await startTestApi(t, {}, { processor: counting.processor });
  for (let i = 0; i < 10; i++) t.match(await attempt(visitor(api, `10.0.0.${i + 1}`), await newLink(api)), { status: 400 });
  t.match(await attempt(visitor(api, '10.0.0.99'), await newLink(api)), { status: 429 }, 'every attempt counted against the connection\'s address');
  t.equal(counting.asked(), 10);
});

t.test('a visitor viewing a link\'s page again gets the same live token; a link keeps at most 5 usable tokens', async (t) => {
  const api = await startTestApi(t, { SETTLE_TRUST_PROXY: 'true' });
  const link = await newLink(api, 'reusable');
  const me = visitor(api, '203.0.113.50');
  const tokens = new Set<string>();
  for (let i = 0; i < 20; i++) tokens.add((await me.view(link)).token!);
  t.equal(tokens.size, 1, '20 views by one visitor: one token');
  t.equal(await usableTokens(api, link), 1, 'one usable token for the link');

  const [mine] = tokens;
  t.equal((await me.pay(link, mine, APPROVED)).status, 200, 'the reused token pays');
  const next = (await me.view(link)).token!;
  t.not(next, mine, 'once spent, the next view gets a new token');

  const others: string[] = [];
  for (let i = 0; i < 8; i++) others.push((await visitor(api, `203.0.113.${60 + i}`).view(link)).token!);
  t.equal(new Set(others).size, 8, 'each visitor its own token');
  t.equal(await usableTokens(api, link), 5, 'at most 5 stay usable');
  t.equal((await visitor(api, '203.0.113.67').pay(link, others[7], APPROVED)).status, 200, 'the newest pays');
  t.equal((await visitor(api, '203.0.113.60').pay(link, others[0], APPROVED)).status, 401, 'an old one was retired');
});

t.test('client tokens and page requests are rate limited by token and by address', async (t) => {
  const clock = movableClock();
  let frozen = clock.clock();
  const api = await startTestApi(t, { SETTLE_RATE_LIMIT: '1/4', SETTLE_TRUST_PROXY: 'true' }, { clock: () => frozen });
  const link = await newLink(api, 'reusable');
  const pages = await Promise.all(Array.from({ length: 6 }, () => visitor(api, '198.51.100.1').view(link)));
  t.same(pages.map((p) => p.status).sort(), [200, 200, 200, 200, 429, 429], 'an address: a burst of 4 page views, then 429');
  const limited = pages.find((p) => p.status === 429)!;
  t.match(limited.headers.get('Retry-After'), /^\d+$/);
  t.equal((await visitor(api, '198.51.100.2').view(link)).status, 200, 'another address is not limited');

  const token = (await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { payment_form: { payment: { amount: 5 } } } } })).body.id;
  const byToken = [];
  for (let i = 0; i < 5; i++) {
    byToken.push((await fetch(`${api.url}/payment_methods`, { method: 'POST', headers: { 'X-Forwarded-For': `198.51.100.${10 + i}`, Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: '{}' })).status);
  }
  t.equal(byToken.filter((s) => s === 429).length, 1, `a token from five addresses: the fifth request is 429 (${byToken.join(',')})`);

  const viaPath = [];
  for (let i = 0; i < 5; i++) viaPath.push((await fetch(`${api.url}/checkout/${token}`, { headers: { 'X-Forwarded-For': `198.51.100.${20 + i}` } })).status);
  t.equal(viaPath.at(-1), 429, `a token in a page's path is counted too (${viaPath.join(',')})`);

  frozen = new Date(frozen.getTime() + 4000);
  t.equal((await visitor(api, '198.51.100.1').view(link)).status, 200, 'once refilled, the address is answered again');
  t.equal((await api.request('GET', '/customers')).status, 200, 'a secret key is limited on its own bucket');
});

t.test('two web processes on one database: a burst of 25 attempts split across them gets 10 cards to the processor', async (t) => {
  const counting = countingProcessor();
  const seams = { processor: counting.processor };
  const first = await startTestApi(t, { SETTLE_TRUST_PROXY: 'true' }, seams);
  const second = await startTestApi(t, { SETTLE_TRUST_PROXY: 'true' }, seams, first.databaseUrl);
  const webs = [visitor(first, '203.0.113.120'), visitor(second, '203.0.113.120')];
  const ready: Array<[Visitor, string, string]> = [];
  for (let i = 0; i < 25; i++) {
    const link = await newLink(first);
    const web = webs[i % 2];
    ready.push([web, link, (await web.view(link)).token!]);
  }
  const answers = await Promise.all(ready.map(([web, link, token]) => web.pay(link, token, DECLINED)));
  t.equal(counting.asked(), 10, 'ten cards reached the processor, across both processes');
  t.equal(answers.filter((a) => a.status === 400 && a.body.error_type === 'TransactionDeclined').length, 10, 'ten declines');
  t.equal(answers.filter((a) => a.status === 429 && a.body.error_type === 'TooManyRequests').length, 15, 'the rest refused before the processor');

  // Through one link, from addresses each process sees once: the link's count is shared too.
  const link = await newLink(first, 'reusable');
  for (let i = 0; i < 10; i++) {
    const web = i % 2 ? visitor(second, `192.0.2.${30 + i}`) : visitor(first, `192.0.2.${30 + i}`);
    t.match(await attempt(web, link), { status: 400 }, `decline ${i + 1} through the link`);
  }
  t.match(await attempt(visitor(first, '192.0.2.90'), link, APPROVED), { status: 429 }, 'the first process refuses the link');
  t.match(await attempt(visitor(second, '192.0.2.91'), link, APPROVED), { status: 429 }, 'and so does the second');
  t.equal(counting.asked(), 20);
});

t.test('a restarted web process keeps the count; the minute passing (by the clock seam) frees it', async (t) => {
  const counting = countingProcessor();
  const clock = movableClock();
  const seams = { processor: counting.processor, clock: clock.clock };
  const before = await startTestApi(t, { SETTLE_TRUST_PROXY: 'true' }, seams);
  const tester = '203.0.113.130';
  for (let i = 0; i < 10; i++) t.match(await attempt(visitor(before, tester), await newLink(before)), { status: 400 }, `decline ${i + 1}`);
  await before.stop();

  const after = await startTestApi(t, { SETTLE_TRUST_PROXY: 'true' }, seams, before.databaseUrl);
  const refused = await attempt(visitor(after, tester), await newLink(after), APPROVED);
  t.match(refused, { status: 429, body: { error_type: 'TooManyRequests' } }, 'after the restart, the address is still refused');
  const wait = Number(refused.headers.get('Retry-After'));
  t.ok(wait >= 1 && wait <= 60, `Retry-After within the minute: ${wait}`);
  t.equal(counting.asked(), 10, 'no card reached the processor after the restart');

  clock.advance(wait * 1000);
  t.match(await attempt(visitor(after, tester), await newLink(after), APPROVED), { status: 200 }, 'after Retry-After the address pays again');
  t.equal(counting.asked(), 11);

  clock.advance(61_000);
  t.match(await attempt(visitor(after, '203.0.113.131'), await newLink(after), APPROVED), { status: 200 });
  const [{ n }] = (await after.db.raw('select count(*)::int as n from payment_attempt_limits')).rows;
  t.equal(n, 2, 'counts idle for a minute were deleted: only the last attempt\'s address and link remain');
});

t.test('only client-token payments are counted in the database: keys\' payments, page views and other token requests leave no count', async (t) => {
  const api = await startTestApi(t, { SETTLE_TRUST_PROXY: 'true' });
  const link = await newLink(api, 'reusable');
  const page = await visitor(api, '203.0.113.140').view(link);
  t.equal(page.status, 200);
  const card = (c: typeof DECLINED) => ({ type: 'payment', amount: 10, payment_method: { type: 'card', card: c } });
  t.match(await api.request('POST', '/transactions', { json: card(DECLINED) }), { status: 400, body: { error_type: 'TransactionDeclined' } }, 'a key\'s declined payment');
  t.match(await api.request('POST', '/transactions', { json: card(APPROVED) }), { status: 200 }, 'a key\'s payment');
  const other = await fetch(`${api.url}/payment_methods`, { method: 'POST', headers: { Authorization: `Bearer ${page.token}`, 'Content-Type': 'application/json' }, body: '{}' });
  t.not(other.status, 500, 'a token\'s request that is not a payment');
  const count = async () => (await api.db.raw('select count(*)::int as n from payment_attempt_limits')).rows[0].n;
  t.equal(await count(), 0, 'no count was written');
  t.match(await visitor(api, '203.0.113.140').pay(link, page.token!, DECLINED), { status: 400 }, 'the page\'s payment');
  t.equal(await count(), 2, 'its address and its link are counted');
});
