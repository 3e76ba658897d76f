import t from 'tap';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);

t.test('v1 customers: the ten operations', async (t) => {
  const created = await api.request('POST', '/customers', { json: { name: 'Ann', email: 'ann@example.com', phone: '555', address: { city: 'Austin' } } });
  t.equal(created.status, 200);
  t.equal(created.body.object, 'customer');
  t.match(created.body.id, /^acct_[0-9A-Za-z]{21,}$/);
  t.equal(created.body.address.city, 'Austin');
  t.match(created.body.created_at, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  const id = created.body.id;

  const got = await api.request('GET', `/customers/${id}`);
  t.same(got.body, created.body, 'select one returns what create returned');

  const many = await api.request('POST', '/customers', { json: { object: 'list', values: [{ name: 'Bob', email: 'bob@example.com' }, { name: 'Cy', email: 'cy@example.com' }] } });
  t.equal(many.status, 200);
  t.equal(many.body.object, 'list');
  t.equal(many.body.values.length, 2);

  const filtered = await api.request('GET', '/customers?email=bob@example.com');
  t.same(filtered.body.values.map((c: any) => c.name), ['Bob']);

  const updated = await api.request('PUT', `/customers/${id}`, { json: { phone: '777' } });
  t.equal(updated.body.phone, '777');
  t.equal(updated.body.name, 'Ann', 'untouched fields stay');

  const byQuery = await api.request('PUT', '/customers?name=Bob|Cy&mode=query', { json: { phone: '999' } });
  t.equal(byQuery.status, 200);
  t.same(byQuery.body.values.map((c: any) => c.phone), ['999', '999']);

  const [bob, cy] = many.body.values;
  const updateMany = await api.request('PUT', '/customers', { json: { object: 'list', values: [{ id: bob.id, name: 'Bobby' }, { id: cy.id, name: 'Cyrus' }] } });
  t.same(updateMany.body.values.map((c: any) => c.name), ['Bobby', 'Cyrus']);

  const deleted = await api.request('DELETE', `/customers/${id}`);
  t.equal(deleted.status, 200);
  t.equal(deleted.body.id, id, 'delete answers with the deleted object');
  t.equal((await api.request('GET', `/customers/${id}`)).status, 404);

  const byQueryDelete = await api.request('DELETE', `/customers?id=${bob.id}&mode=query`);
  t.same(byQueryDelete.body.values.map((c: any) => c.id), [bob.id]);

  const deleteMany = await api.request('DELETE', '/customers', { json: { object: 'list', values: [{ id: cy.id }] } });
  t.same(deleteMany.body.values.map((c: any) => c.id), [cy.id]);
  t.same((await api.request('GET', '/customers')).body.values, []);
});

t.test('v2 accounts: one table, two views', async (t) => {
  const processing = await api.request('POST', '/accounts', {
    version: 'v2',
    json: { type: 'processing', name: 'Shop', processing: { settings: { funding: { style: 'netted', delay: 3 } } } },
  });
  t.equal(processing.status, 200, JSON.stringify(processing.body));
  t.equal(processing.body.object, 'account');
  t.equal(processing.body.processing.status.funding, 'pending');
  t.equal(processing.body.processing.settings.funding.style, 'netted');

  const v1 = await api.request('GET', `/processing_accounts/${processing.body.id}`);
  t.equal(v1.body.object, 'processing_account');
  t.equal(v1.body.funding_style, 'net', 'v2 netted reads as v1 net');
  t.equal(v1.body.funding_delay, 3);
  t.equal(v1.body.status, 'pending');

  const customer = await api.request('POST', '/accounts', {
    version: 'v2',
    json: { type: 'customer', name: 'Dee', contact_details: { email: 'dee@example.com' }, primary_processing_id: processing.body.id },
  });
  t.equal(customer.status, 200, JSON.stringify(customer.body));
  const asV1 = await api.request('GET', `/customers/${customer.body.id}`);
  t.equal(asV1.body.email, 'dee@example.com', 'v2 contact_details.email is v1 email');
  t.equal(asV1.body.primary_processing_id, processing.body.id);

  const customers = await api.request('GET', '/accounts?type=customer', { version: 'v2' });
  t.same(customers.body.values.map((a: any) => a.id), [customer.body.id]);
  const byEmail = await api.request('GET', '/accounts?contact_details[email]=dee@example.com', { version: 'v2' });
  t.equal(byEmail.body.values.length, 1);

  const badStyle = await api.request('PUT', `/processing_accounts/${processing.body.id}`, { json: { funding_style: 'netted' } });
  t.equal(badStyle.status, 400, 'v1 does not accept the v2 spelling');
  t.equal(badStyle.body.error_type, 'InvalidAttributes');
  const delay = await api.request('PUT', `/processing_accounts/${processing.body.id}`, { json: { funding_delay: 11 } });
  t.equal(delay.status, 400, 'funding delay is 0–10');

  const missingPrimary = await api.request('POST', '/customers', { json: { name: 'X', primary_processing_id: 'acct_nope' } });
  t.equal(missingPrimary.status, 400);
  t.match(missingPrimary.body.details, { primary_processing_id: String });
});

t.test('processing status changes record processing_status events', async (t) => {
  const created = await api.request('POST', '/processing_accounts', { json: { name: 'Evented' } });
  await api.request('PUT', `/processing_accounts/${created.body.id}`, { json: { status: 'active' } });
  await api.request('PUT', `/processing_accounts/${created.body.id}`, { json: { name: 'Renamed' } });
  const events = await api.db('events').where({ object_id: created.body.id }).orderBy('seq');
  t.same(events.map((e: any) => [e.trigger, e.value]), [['processing_status', 'pending'], ['processing_status', 'active']]);
  t.ok(events.every((e: any) => e.txid !== null), 'each event carries its writing transaction, which the dispatcher follows');
  const active = await api.request('GET', `/processing_accounts/?status=active&id=${created.body.id}`);
  t.same(active.body.values.map((a: any) => a.id), [created.body.id]);
});

t.test('the three body encodings decode to the same object', async (t) => {
  const json = await api.request('POST', '/customers', { json: { name: 'Enc', email: 'enc@example.com', address: { city: 'Paris' }, attrs: { tier: 'gold' } } });
  const form = await api.request('POST', '/customers', { form: 'name=Enc&email=enc%40example.com&address[city]=Paris&attrs[tier]=gold' });
  const multipart = new FormData();
  multipart.set('name', 'Enc');
  multipart.set('email', 'enc@example.com');
  multipart.set('address[city]', 'Paris');
  multipart.set('attrs[tier]', 'gold');
  const mp = await api.request('POST', '/customers', { body: multipart });
  const strip = (o: any) => ({ ...o, id: undefined, created_at: undefined, modified_at: undefined });
  t.equal(form.status, 200, JSON.stringify(form.body));
  t.equal(mp.status, 200, JSON.stringify(mp.body));
  t.same(strip(form.body), strip(json.body));
  t.same(strip(mp.body), strip(json.body));

  const list = await api.request('POST', '/processing_accounts', { form: 'object=list&values[0][name]=P1&values[0][funding_delay]=4&values[1][name]=P2' });
  t.equal(list.status, 200, JSON.stringify(list.body));
  t.same(list.body.values.map((p: any) => [p.name, p.funding_delay]), [['P1', 4], ['P2', 2]], 'form strings coerce by field type');
});
