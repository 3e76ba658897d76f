/**
 * Hostile input on the onboarding collections: every leaf of a valid body (and the body itself)
 * replaced by wrongly typed, huge, nested or prototype-reaching values, in both versions, as JSON
 * and as forms; odd filters, fields and orders. Never a 5xx, every 4xx a contract error object,
 * and a rejected write leaves no row and no event behind.
 */
import t, { type Test } from 'tap';
import { startTestApi } from './helpers/api.ts';

process.env.SETTLE_PUBLIC_URL = 'https://pay.example.test';
const api = await startTestApi(t);
const TABLES = ['accounts', 'entities', 'stakeholders', 'intents', 'payment_activations', 'link_emails', 'access_tokens', 'events'];

const entity = (await api.request('POST', '/entities', { version: 'v2', json: { type: 'business', legal_name: 'Base LLC' } })).body;

const BODIES: Array<[path: string, version: string, body: Record<string, unknown>]> = [
  ['/entities', 'v2', {
    type: 'business', legal_name: 'E', tax_id: { value: '123456789' }, address: { city: 'Austin' },
    business: { structure: 'llc', formation: { date: '2020-01-01' }, primary_contact: { email: 'a@example.com' }, stakeholders: [{ association: { ownership: { percentage: 10 }, roles: ['owner'] }, govt_id: { tax_id: { value: '111223333' } } }] },
  }],
  ['/legal_entities', 'v1', { legal_name: 'L', type: 'LIMITED_LIABILITY_COMPANY', ein: '123456789', start_date: '1/2/2010', owners: [{ full_name: 'O', ssn: '111223333', ownership: '50', birth_date: '1/2/1980' }] }],
  ['/stakeholders', 'v2', { entity_id: entity.id, personal_information: { full_name: 'S', birth_date: '1980-01-01' }, association: { title: 'CFO' } }],
  ['/processing_accounts', 'v1', { name: 'P', legal_entity: { legal_name: 'L', ein: '123456789', owners: { full_name: 'O', ownership: '20' } }, processing_settings_id: 'ps_x' }],
  ['/accounts', 'v2', { type: 'processing', name: 'P', entity: { type: 'individual', legal_name: 'I', tax_id: { value: '123456789' } }, processing: { settings_id: 'ps_x' } }],
  ['/intents', 'v2', { type: 'checkout_link', checkout_link: { amount: 5, description: 'd', redirects: { completed_url: 'https://x.example' } }, send_to: [{ name: 'n', email: 'n@example.com' }] }],
  ['/intents', 'v1', { type: 'checkout_plugin', checkout_plugin: { amount: 5, description: 'd', attrs: { a: 1 } } }],
  ['/payment_activations', 'v1', { intent: { entity_name: 'E', entity_type: 'business', type: 'bank_account' }, send_to: [{ email: 'n@example.com' }], attrs: { a: 1 } }],
];

const HOSTILE: unknown[] = [
  null, true, -1, 1e308, '', 'x'.repeat(5000), '\u0000', [], [1, 'a', null], {}, { value: { deep: [1] } },
  JSON.parse('{"__proto__": {"polluted": 1}}'), { constructor: { prototype: 1 } }, [[[[[]]]]], '1/1/99999', 'ent_missing',
];

/** Every leaf path of a body: [["type"], ["business","formation","date"], ["owners",0,"ssn"], …]. */
function leaves(value: unknown, prefix: Array<string | number> = []): Array<Array<string | number>> {
  if (Array.isArray(value)) return value.flatMap((item, i) => leaves(item, [...prefix, i]));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => leaves(v, [...prefix, k]));
  return [prefix];
}

function replaced(body: unknown, path: Array<string | number>, value: unknown): unknown {
  const copy = structuredClone(body) as any;
  let at = copy;
  for (const key of path.slice(0, -1)) at = at[key];
  at[path[path.length - 1]] = value;
  return copy;
}

function toForm(value: unknown, prefix = ''): string[] {
  if (value === null || value === undefined) return [`${encodeURIComponent(prefix)}=`];
  if (typeof value !== 'object') return [`${encodeURIComponent(prefix)}=${encodeURIComponent(String(value))}`];
  return Object.entries(value).flatMap(([k, v]) => toForm(v, prefix ? `${prefix}[${k}]` : k));
}

async function counts(): Promise<number[]> {
  const result = await api.db.raw(`select ${TABLES.map((table) => `(select count(*) from ${table})::int as ${table}`).join(', ')}`);
  return Object.values(result.rows[0]) as number[];
}

function checkAnswer(t: Test, label: string, res: { status: number; body: any }): void {
  if (res.status >= 500 || (res.status >= 400 && res.body?.object !== 'error')) t.fail(`${label}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
}

t.test('hostile values at every field of every onboarding body answer 4xx and write nothing', async (t) => {
  let requests = 0;
  for (const [path, version, base] of BODIES) {
    const variants: unknown[] = [...HOSTILE, base];
    for (const leaf of leaves(base)) for (const value of HOSTILE) variants.push(replaced(base, leaf, value));
    for (const json of variants) {
      const before = await counts();
      const res = await api.request('POST', path, { version, json });
      requests++;
      checkAnswer(t, `${version} POST ${path} ${JSON.stringify(json).slice(0, 120)}`, res);
      if (res.status !== 200) t.same(await counts(), before, `${path}: a rejected write leaves nothing behind`);
    }
    const form = await api.request('POST', path, { version, form: toForm(base).join('&') + '&a[b][c][d]=1&[x]=y&owners[99999]=1' });
    checkAnswer(t, `${path} form`, form);
  }
  t.ok(requests > 500, `${requests} requests`);
});

t.test('odd filters, fields and orders on the onboarding collections are 4xx, never 5xx', async (t) => {
  const queries = [
    'tax_id[value]=x', 'tax_id.sealed=x', 'ein=>5', 'owners=1', 'business[stakeholders][0][id]=x', 'verification_status=pending|verified',
    'fields=owners,ein', 'fields=business.stakeholders', 'fields=tax_id.sealed', 'order_by=desc(owners)', 'order_by=desc(legal_name)',
    'q=tax_id.value=="x"', 'q=send_to[0].email=="x"', 'send_to=x', 'status=expired', 'funding_style=net', 'group_by=status&fields=status,count',
    'fields=sum(funding_delay)', 'limit=-1', 'offset=abc', 'q=(((', 'attrs[a]=1', 'processing_settings_id=ps_x', 'intent[entity_name]=?*a*',
  ];
  for (const path of ['entities', 'legal_entities', 'stakeholders', 'intents', 'payment_activations', 'processing_settings', 'profiles', 'accounts', 'processing_accounts']) {
    for (const version of ['v1', 'v2']) {
      for (const query of queries) {
        const res = await api.request('GET', `/${path}?${query}`, { version });
        checkAnswer(t, `${version} /${path}?${query}`, res);
      }
      checkAnswer(t, `${version} /${path}/nope`, await api.request('GET', `/${path}/nope`, { version }));
      checkAnswer(t, `${version} PUT /${path}/nope`, await api.request('PUT', `/${path}/nope`, { version, json: { attrs: {} } }));
      checkAnswer(t, `${version} PUT /${path}?mode=query`, await api.request('PUT', `/${path}?id=x&mode=query`, { version, json: { legal_name: [] } }));
    }
  }
  const refused = await api.request('GET', '/entities?q=(((', { version: 'v2' });
  t.equal(refused.status, 400, 'a broken q is refused, not ignored');
  t.equal(refused.body.object, 'error');
});

t.test('updates of stored onboarding objects with hostile values answer 4xx', async (t) => {
  const intent = (await api.request('POST', '/intents', { version: 'v2', json: { type: 'checkout_link', checkout_link: { amount: 5, description: 'd' } } })).body;
  const activation = (await api.request('POST', '/payment_activations', { json: { intent: { entity_name: 'E' } } })).body;
  const account = (await api.request('POST', '/accounts', { version: 'v2', json: { type: 'processing', name: 'P', entity_id: entity.id } })).body;
  for (const [path, keys] of [
    [`/entities/${entity.id}`, ['tax_id', 'business', 'type', 'verification_status', 'legal_name']],
    [`/intents/${intent.id}`, ['checkout_link', 'send_to', 'status', 'url', 'type']],
    [`/payment_activations/${activation.id}`, ['intent', 'send_to', 'sent_to', 'status', 'account_id']],
    [`/accounts/${account.id}`, ['entity', 'entity_id', 'processing', 'legal_entity']],
  ] as Array<[string, string[]]>) {
    for (const key of keys) {
      for (const value of HOSTILE) {
        const before = await counts();
        const res = await api.request('PUT', path, { version: 'v2', json: { [key]: value } });
        checkAnswer(t, `PUT ${path} ${key}=${JSON.stringify(value).slice(0, 60)}`, res);
        if (res.status !== 200) t.same(await counts(), before);
      }
    }
  }
  t.equal(Object.prototype.hasOwnProperty.call({}, 'polluted'), false, 'no prototype pollution');
});
