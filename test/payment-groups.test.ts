/**
 * Group commit: card payments, and plain customer creates, that arrive together are written by
 * one statement (api/db/groupWriter.ts), and each keeps what is its own — its tenant, its events,
 * its audit events with its own actor and request id — as if it had been written alone.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);
const CARD = { type: 'card', card: { card_number: '4242 4242 4242 4242', expiry: '12/35', card_code: '123' } };
const shops = { acme: api.key, other: await api.newKey('other', 'test') };
for (const key of Object.values(shops)) {
  const shop = await api.request('POST', '/processing_accounts', { key, json: { name: 'Shop' } });
  if (shop.status !== 200) throw new Error(JSON.stringify(shop.body));
}

t.test('payments arriving together share statements, and each keeps its tenant, events and audit actor', async (t) => {
  const sent = Array.from({ length: 48 }, (_, i) => ({ key: i % 2 ? shops.other : shops.acme, requestId: `group-${i}`, amount: 1 + i }));
  const answers = await Promise.all(sent.map((s) => api.request('POST', '/transactions', {
    key: s.key, headers: { 'X-Request-Id': s.requestId }, json: { type: 'payment', amount: s.amount, payment_method: CARD },
  })));
  t.same(answers.map((a) => a.status), sent.map(() => 200), 'every payment answered');
  t.same(answers.map((a) => a.body.amount), sent.map((s) => s.amount), 'each answered with its own row');
  const ids = answers.map((a) => a.body.id);
  const stored = (await api.db.raw(`select t.id, t.xmin::text as writer, o.name as org from transactions t join orgs o on o.id = t.org_id where t.id = any(?)`, [ids])).rows;
  const byId = new Map(stored.map((r: any) => [r.id, r]));
  t.same(ids.map((id, i) => byId.get(id)?.org), sent.map((s) => (s.key === shops.acme ? 'acme' : 'other')), 'each stored in its own tenant');
  const statements = new Set(stored.map((r: any) => r.writer)).size;
  t.ok(statements < ids.length, `fewer database transactions (${statements}) than payments (${ids.length})`);

  const audits = (await api.db.raw(`select a.data->>'object_id' as object_id, a.data->>'request_id' as request_id, a.data->'actor'->>'key_prefix' as key_prefix, o.name as org
                                     from audit_events a join orgs o on o.id = a.org_id
                                    where a.data->>'object_type' = 'transaction' and a.data->>'object_id' = any(?)`, [ids])).rows;
  const auditOf = new Map(audits.map((a: any) => [a.object_id, a]));
  t.equal(audits.length, ids.length, 'one audit event per payment');
  t.same(ids.map((id) => auditOf.get(id)?.request_id), sent.map((s) => s.requestId), 'each audit event names its own request');
  t.same(ids.map((id) => auditOf.get(id)?.key_prefix), sent.map((s) => s.key.slice(0, s.key.length - 24)), 'and its own key');
  t.same(ids.map((id) => auditOf.get(id)?.org), ids.map((id) => byId.get(id)?.org), 'in its own tenant');

  const events = (await api.db.raw(`select e.object_id, e.trigger, o.name as org from events e join orgs o on o.id = e.org_id where e.object_id = any(?)`, [ids])).rows;
  for (const [i, id] of ids.entries()) {
    const own = events.filter((e: any) => e.object_id === id);
    t.same(own.map((e: any) => e.trigger).filter((name: string) => name !== 'transaction:operation').sort(), ['payment', 'processed'], `${sent[i].requestId}: its events`);
    t.ok(own.every((e: any) => e.org === byId.get(id)?.org), `${sent[i].requestId}: in its tenant`);
  }
  const methods = (await api.db.raw(`select count(*)::int as n from payment_methods where id = any(?)`, [answers.map((a) => a.body.payment_method_id)])).rows[0].n;
  t.equal(methods, ids.length, 'each inline card stored');
});

t.test('payments arriving together keep their own text through the statement: quotes, backslashes, line breaks, unicode and "null"', async (t) => {
  const texts = ['say "hi"', 'back\\slash \\" and \\u0041', 'two\nlines\tand a tab', 'é ✓ 🙂 \u2028', 'null', '{"not": "json"}', '[1, 2]', ''];
  const sent = Array.from({ length: 24 }, (_, i) => ({ description: `${texts[i % texts.length]} #${i}`, requestId: `text-${i}` }));
  const answers = await Promise.all(sent.map((s) => api.request('POST', '/transactions', {
    key: shops.acme, headers: { 'X-Request-Id': s.requestId }, json: { type: 'payment', amount: 2, description: s.description, payment_method: CARD },
  })));
  t.same(answers.map((a) => [a.status, a.body.description]), sent.map((s) => [200, s.description]), 'each answered with its own text');
  const ids = answers.map((a) => a.body.id);
  const stored = (await api.db.raw(`select id, data->>'description' as description, xmin::text as writer from transactions where id = any(?)`, [ids])).rows;
  const byId = new Map(stored.map((r: any) => [r.id, r]));
  t.same(ids.map((id) => byId.get(id)?.description), sent.map((s) => s.description), 'each stored with its own text');
  t.ok(new Set(stored.map((r: any) => r.writer)).size < ids.length, 'fewer database transactions than payments');
  const audits = (await api.db.raw(`select data->>'object_id' as object_id, data->'changes'->'description'->>1 as description, data->>'request_id' as request_id
                                      from audit_events where data->>'object_type' = 'transaction' and data->>'object_id' = any(?)`, [ids])).rows;
  const auditOf = new Map(audits.map((a: any) => [a.object_id, a]));
  t.same(ids.map((id) => [auditOf.get(id)?.description, auditOf.get(id)?.request_id]), sent.map((s) => [s.description, s.requestId]), 'each audit event holds its own text and request');
  const methods = (await api.db.raw(`select count(*)::int as n from payment_methods where id = any(?) and data->'card'->>'card_number' = 'xxxxxxxxxxxx4242'`, [answers.map((a) => a.body.payment_method_id)])).rows[0].n;
  t.equal(methods, ids.length, 'each inline card stored masked');
});

t.test('customers created together share statements, and each is audited with its own request and key, in its tenant', async (t) => {
  const sent = Array.from({ length: 40 }, (_, i) => ({ key: i % 2 ? shops.other : shops.acme, requestId: `customer-${i}`, name: `Customer ${i}` }));
  const answers = await Promise.all(sent.map((s) => api.request('POST', '/customers', { key: s.key, headers: { 'X-Request-Id': s.requestId }, json: { name: s.name } })));
  t.same(answers.map((a) => [a.status, a.body.name]), sent.map((s) => [200, s.name]), 'each answered with its own row');
  const ids = answers.map((a) => a.body.id);
  const stored = (await api.db.raw(`select a.id, a.xmin::text as writer, o.name as org from accounts a join orgs o on o.id = a.org_id where a.id = any(?)`, [ids])).rows;
  const byId = new Map(stored.map((r: any) => [r.id, r]));
  t.same(ids.map((id) => byId.get(id)?.org), sent.map((s) => (s.key === shops.acme ? 'acme' : 'other')), 'each stored in its own tenant');
  t.ok(new Set(stored.map((r: any) => r.writer)).size < ids.length, 'fewer database transactions than creates');
  const audits = (await api.db.raw(`select a.data->>'object_id' as object_id, a.data->>'request_id' as request_id, a.data->'actor'->>'key_prefix' as key_prefix,
                                           a.data->'changes'->'data.name'->>1 as name, o.name as org
                                      from audit_events a join orgs o on o.id = a.org_id where a.data->>'object_id' = any(?)`, [ids])).rows;
  const auditOf = new Map(audits.map((a: any) => [a.object_id, a]));
  t.equal(audits.length, ids.length, 'one audit event per customer');
  t.same(ids.map((id) => auditOf.get(id)?.request_id), sent.map((s) => s.requestId), 'each names its own request');
  t.same(ids.map((id) => auditOf.get(id)?.key_prefix), sent.map((s) => s.key.slice(0, s.key.length - 24)), 'and its own key');
  t.same(ids.map((id) => auditOf.get(id)?.org), ids.map((id) => byId.get(id)?.org), 'in its own tenant');
});
