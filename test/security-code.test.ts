import t from 'tap';
import { startTestApi, type ApiResponse } from './helpers/api.ts';

// A card's security code is checked and never stored (contract §7): on every path that changes a
// payment method, in every body encoding a client library sends, nothing in the database holds it.
const api = await startTestApi(t);
const customer = (await api.request('POST', '/customers', { json: { name: 'Holder' } })).body;
const card = { card_number: '4242424242424242', expiry: '12/35' };

function multipart(fields: Record<string, string>): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  return form;
}

async function newMethod(): Promise<string> {
  return (await api.request('POST', '/payment_methods', { json: { type: 'card', customer_id: customer.id, card } })).body.id;
}

/** Every row of every table, in every schema the service writes, whose text holds the key `card_code` with this value. */
async function rowsHolding(code: string): Promise<string[]> {
  const tables = (await api.db.raw(
    `select table_schema, table_name from information_schema.tables
      where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`,
  )).rows as Array<{ table_schema: string; table_name: string }>;
  const found: string[] = [];
  for (const { table_schema: schema, table_name: table } of tables) {
    const hit = await api.db.raw(`select count(*)::int as n from "${schema}"."${table}" r where r::text ~* ?`, [`card_code[^0-9a-z]{1,12}${code}`]);
    if (hit.rows[0].n > 0) found.push(`${schema}.${table}`);
  }
  return found;
}

const paths: Array<[string, (code: string) => Promise<ApiResponse>]> = [
  ['create, JSON', (code) => api.request('POST', '/payment_methods', { json: { type: 'card', customer_id: customer.id, card: { ...card, card_code: code } } })],
  ['create, form', (code) => api.request('POST', '/payment_methods', {
    form: `type=card&customer_id=${customer.id}&card[card_number]=${card.card_number}&card[expiry]=12%2F35&card[card_code]=${code}`,
  })],
  ['create, multipart', (code) => api.request('POST', '/payment_methods', {
    body: multipart({ type: 'card', customer_id: customer.id, 'card[card_number]': card.card_number, 'card[expiry]': card.expiry, 'card[card_code]': code }),
  })],
  ['update, JSON', async (code) => api.request('PUT', `/payment_methods/${await newMethod()}`, { json: { card: { card_code: code } } })],
  ['update, form', async (code) => api.request('PUT', `/payment_methods/${await newMethod()}`, { form: `card[card_code]=${code}` })],
  ['update, multipart', async (code) => api.request('PUT', `/payment_methods/${await newMethod()}`, { body: multipart({ 'card[card_code]': code }) })],
  ['update of a list', async (code) => api.request('PUT', '/payment_methods', { json: { object: 'list', values: [{ id: await newMethod(), card: { card_code: code } }] } })],
  ['update by query', async (code) => api.request('PUT', `/payment_methods?id=${await newMethod()}&mode=query`, { json: { card: { card_code: code } } })],
  ['update, v2', async (code) => api.request('PUT', `/payment_methods/${await newMethod()}`, { version: 'v2', json: { card: { card_code: code } } })],
  ['a payment with an inline card', (code) => api.request('POST', '/transactions', {
    json: { type: 'payment', amount: 12.5, customer_id: customer.id, payment_method: { type: 'card', card: { ...card, card_code: code } } },
  })],
  ['a payment with an inline card, v2', (code) => api.request('POST', '/transactions', {
    version: 'v2', json: { type: 'payment', amount: 12.5, sender: { account_id: customer.id, method: { type: 'card', card: { ...card, card_code: code } } } },
  })],
  ['a client token\'s payment method form', async (code) => {
    const token = (await api.request('POST', '/access_tokens', { json: { type: 'client', intent: { payment_method_form: {} } } })).body.id;
    return api.request('POST', '/payment_methods', { key: token, json: { type: 'card', card: { ...card, card_code: code } } });
  }],
];

t.test('the security code is accepted and stored nowhere, on every path that changes a payment method', async (t) => {
  for (const [i, [name, send]] of paths.entries()) {
    const code = String(6540 + i).padStart(4, '0');
    const answer = await send(code);
    t.equal(answer.status, 200, answer.status === 200 ? `${name}: accepted` : `${name}: ${JSON.stringify(answer.body)}`);
    t.notMatch(JSON.stringify(answer.body), /card_code/, `${name}: the answer does not show it`);
    t.same(await rowsHolding(code), [], `${name}: no stored row holds it`);
  }
});

t.test('a security code that is not 3 or 4 digits is refused on update as on create', async (t) => {
  const id = await newMethod();
  const refused = await api.request('PUT', `/payment_methods/${id}`, { json: { card: { card_code: '65x' } } });
  t.equal(refused.status, 400);
  t.same(refused.body.details, { card: { card_code: 'Must be 3 or 4 digits' } });
  const created = await api.request('POST', '/payment_methods', { json: { type: 'card', card: { ...card, card_code: '12' } } });
  t.same(created.body.details, { card: { card_code: 'Must be 3 or 4 digits' } });
});
