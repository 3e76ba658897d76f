/**
 * `/openapi.json`: a valid OpenAPI 3.1 document (checked by a standard validator) for each version,
 * generated from the registry, so every collection and field the engine serves is in it, and the
 * request log the reporting store serves.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import t from 'tap';
import { apiPath, appliesTo } from '../api/engine/family.ts';
import { collections } from '../api/families/index.ts';
import { requestLogs } from '../api/families/request_logs/family.ts';
import { startTestApi } from './helpers/api.ts';

const api = await startTestApi(t);

for (const version of ['v1', 'v2'] as const) {
  t.test(`the ${version} document is valid OpenAPI 3.1 and lists every collection and field`, async (t) => {
    const res = await api.request('GET', `/openapi.json?version=${version}`, { key: null });
    t.equal(res.status, 200, 'public, no key needed');
    const doc = res.body;
    t.equal(doc.openapi, '3.1.0');
    const result = await new Validator().validate(structuredClone(doc));
    t.ok(result.valid, JSON.stringify(result.errors ?? '').slice(0, 2000));
    for (const collection of collections) {
      t.ok(doc.paths[`/${collection.path}`]?.get, `GET /${collection.path}`);
      t.ok(doc.paths[`/${collection.path}/{id}`]?.get, `GET /${collection.path}/{id}`);
      t.equal(Boolean(doc.paths[`/${collection.path}`].post), !collection.readOnly, `POST /${collection.path} only when writable`);
      const name = collection.path.split('_').map((p) => p[0].toUpperCase() + p.slice(1)).join('');
      const schema = doc.components.schemas[name];
      for (const field of collection.family.fields) {
        const path = apiPath(field, version);
        if (!path || (collection.fixedType && !appliesTo(field, collection.fixedType))) continue;
        let node = schema;
        for (const key of path.split('.')) node = node?.properties?.[key];
        t.ok(node, `${name}.${path}`);
        if (field.nonDefault) t.equal(node?.['x-non-default'], true, `${name}.${path} is marked non-default`);
        if (field.enum) t.ok(node?.enum?.length > 0, `${name}.${path} lists its values`);
      }
    }
    t.ok(doc.paths['/request_logs']?.get, 'GET /request_logs, served from the reporting store');
    t.notOk(doc.paths['/request_logs'].post || doc.paths['/request_logs/{id}'], 'only its list');
    for (const field of requestLogs.fields) t.ok(doc.components.schemas.RequestLogs.properties[apiPath(field, version)!], `RequestLogs.${field.store}`);
  });
}

t.test('the documents differ where the versions do', async (t) => {
  const v1 = (await api.request('GET', '/openapi.json?version=v1', { key: null })).body;
  const v2 = (await api.request('GET', '/openapi.json?version=v2', { key: null })).body;
  t.ok(v1.components.schemas.Customers.properties.email, 'v1 customers have email');
  t.ok(v2.components.schemas.Accounts.properties.contact_details.properties.email, 'v2 accounts have contact_details.email');
  t.same(v1.components.schemas.CustomersCreate.required, ['name'], 'name is required on create');
  t.equal(v1.components.schemas.Transactions.properties.status.readOnly, undefined);
  t.equal(v1.components.schemas.Transactions.properties.status_code.readOnly, true);
  t.equal((await api.request('GET', '/openapi.json?version=v3', { key: null })).status, 400);
});
