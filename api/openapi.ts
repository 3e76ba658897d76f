/**
 * The OpenAPI 3.1 description of one interface version, generated from the object registry: every
 * collection with the generic operations and query parameters, every field with its type, enum,
 * read-only/write-only flags, required-on-create and non-default (`x-non-default`) marks, and the
 * error format; each collection under a readable name, each operation with a curl sample
 * (openapiSamples.ts). Nothing here is written by hand per family, so it cannot drift from the
 * engine; the webhook actions beyond the generic operations come from their own family
 * (families/webhooks/openapi.ts). `GET /docs` renders it (api/http/docsRoutes.ts).
 */
import { apiPath, appliesTo, type Collection, type FieldSpec, type Version } from './engine/family.ts';
import { acceptedValues } from './schema/values.ts';
import { collections } from './families/index.ts';
import { requestLogs } from './families/request_logs/family.ts';
import { webhookActionPaths } from './families/webhooks/openapi.ts';
import { paymentLinkActionPaths } from './families/payment_links/openapi.ts';
import { invoiceActionPaths } from './families/invoices/openapi.ts';
import { curlSamples, type OperationName } from './openapiSamples.ts';

type Schema = Record<string, unknown>;

const TIMESTAMP_PATTERN = '^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}$';

function fieldSchema(field: FieldSpec, version: Version): Schema {
  const schema: Schema = (() => {
    switch (field.type) {
      case 'integer': return { type: 'integer', ...(field.min !== undefined && { minimum: field.min }), ...(field.max !== undefined && { maximum: field.max }) };
      case 'number': return { type: 'number' };
      case 'money': return {
        type: 'number', ...(field.min === 0 ? { minimum: 0 } : { exclusiveMinimum: 0 }),
        description: `Amount in major units; more than two decimals are rounded half-up to the cent${field.min === 0 ? '. Zero only for a card verification (a card typed in with keep_active: true)' : ''}`,
      };
      case 'boolean': return { type: 'boolean' };
      case 'datetime': return { type: 'string', pattern: TIMESTAMP_PATTERN, description: 'UTC "YYYY-MM-DD HH:MM:SS"' };
      case 'json': return { type: 'object', additionalProperties: true };
      case 'list': return { type: 'array', items: { type: 'object', additionalProperties: true } };
      case 'email': return { type: 'string', format: 'email', maxLength: field.maxLength ?? 1024 };
      default: return { type: 'string', maxLength: field.maxLength ?? 1024 };
    }
  })();
  if (field.enum) schema.enum = acceptedValues(field, version);
  if (field.readOnly) schema.readOnly = true;
  if (field.writeOnly) schema.writeOnly = true;
  if (field.nonDefault) schema['x-non-default'] = true;
  if (field.defaultFor) schema['x-default-for'] = field.defaultFor;
  if (!field.required) {
    schema.type = [schema.type, 'null'];
    if (schema.enum) schema.enum = [...(schema.enum as string[]), null];
  }
  return schema;
}

type SchemaUse = 'read' | 'create' | 'update';

/** Dotted API paths become nested object schemas; a create schema lists what is required. */
function objectSchema(collection: Collection, version: Version, use: SchemaUse): Schema {
  const forCreate = use === 'create';
  const root: Schema = { type: 'object', properties: { object: { type: 'string', readOnly: true } } };
  for (const field of collection.family.fields) {
    const path = apiPath(field, version);
    if (!path || (collection.fixedType && !appliesTo(field, collection.fixedType))) continue;
    if (use !== 'read' && field.readOnly) continue;
    const keys = path.split('.');
    let node = root;
    keys.forEach((key, i) => {
      const properties = (node.properties ??= {}) as Record<string, Schema>;
      if (i === keys.length - 1) {
        properties[key] = fieldSchema(field, version);
        if (forCreate && field.required && field.default === undefined && (!field.types || collection.fixedType)) {
          node.required = [...((node.required as string[] | undefined) ?? []), key];
        }
        return;
      }
      properties[key] ??= { type: 'object', properties: {} };
      node = properties[key];
    });
  }
  if (forCreate && !collection.fixedType && collection.family.types.length > 1) {
    (root.properties as Record<string, Schema>).type = { type: 'string', enum: typeValues(collection, version), description: 'The kind of object to create' };
  }
  return root;
}

function typeValues(collection: Collection, version: Version): string[] {
  const typeField = collection.family.fields.find((f) => f.store === 'type');
  return typeField?.enum ? acceptedValues(typeField, version) : collection.family.types;
}

function schemaName(collection: Collection, suffix = ''): string {
  return collection.path.split('_').map((p) => p[0].toUpperCase() + p.slice(1)).join('') + suffix;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Schema) => ({ 'application/json': { schema } });

const QUERY_PARAMETERS: Schema[] = [
  { name: 'fields', in: 'query', schema: { type: 'string' }, description: 'Comma-separated fields or expressions; `*` adds to the defaults; aggregates with `group_by`' },
  { name: 'q', in: 'query', schema: { type: 'string' }, description: 'A filter expression: `amount > 100 && status == "processed"` (see Lists and queries)' },
  { name: 'order_by', in: 'query', schema: { type: 'string' }, description: '`field`, `desc(field)`, comma-separated' },
  { name: 'group_by', in: 'query', schema: { type: 'string' } },
  { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 0, maximum: 10000, default: 1000 } },
  { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0, default: 0 } },
];
const MODE = { name: 'mode', in: 'query', schema: { type: 'string', enum: ['query'] }, description: 'Required to update or delete every object matching the filters' };
const ID = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
const VERSION_HEADER = { name: 'X-API-Version', in: 'header', schema: { type: 'string', enum: ['v1', 'v2'] } };
const IDEMPOTENCY = { name: 'Idempotency-Key', in: 'header', schema: { type: 'string', maxLength: 255 } };

const ERRORS = {
  '400': { description: 'BadRequest or InvalidAttributes', content: json(ref('Error')) },
  '401': { description: 'Unauthorized', content: json(ref('Error')) },
  '403': { description: 'Forbidden', content: json(ref('Error')) },
  '404': { description: 'NotFound', content: json(ref('Error')) },
  '409': { description: 'Conflict', content: json(ref('Error')) },
  '413': { description: 'PayloadTooLarge', content: json(ref('Error')) },
  '429': { description: 'TooManyRequests', content: json(ref('Error')) },
  '503': { description: 'ServiceUnavailable', content: json(ref('Error')) },
};

function listOf(name: string): Schema {
  return { type: 'object', required: ['object', 'values'], properties: { object: { const: 'list' }, values: { type: 'array', items: ref(name) } } };
}

/** `processing_accounts` → `Processing accounts`: the name the reference shows for a collection. */
function displayName(collection: Collection): string {
  const words = collection.path.replace(/_/g, ' ');
  return words[0].toUpperCase() + words.slice(1);
}

function tagOf(collection: Collection, version: Version): Schema {
  const { family } = collection;
  const types = collection.fixedType ? [collection.fixedType] : family.types;
  const objects = [...new Set(types.map((type) => family.objectName(version, type)))];
  const lines = [`Objects ${objects.map((o) => `\`${o}\``).join(', ')}, with ids \`${family.idPrefix}_…\`.`];
  if (types.length > 1) lines.push(`Types: ${typeValues(collection, version).map((t) => `\`${t}\``).join(', ')}.`);
  if (collection.readOnly) lines.push('Read-only: Settle writes these objects itself.');
  return { name: collection.path, 'x-displayName': displayName(collection), description: lines.join(' ') };
}

/** The object one item of the collection is, in words: `transaction`, `processing account`. */
function singularName(collection: Collection, version: Version): string {
  const { family } = collection;
  const objects = new Set((collection.fixedType ? [collection.fixedType] : family.types).map((type) => family.objectName(version, type)));
  const name = (objects.size === 1 ? [...objects][0] : family.name).replace(/_/g, ' ');
  return `${/^[aeiou]/.test(name) ? 'an' : 'a'} ${name}`;
}

/** What each operation is called in the reference, and what it takes where that is not obvious. */
function operationTexts(collection: Collection, version: Version): Record<OperationName, { summary: string; description?: string }> {
  const many = displayName(collection).toLowerCase();
  const one = singularName(collection, version);
  return {
    list: { summary: `List ${many}` },
    get: { summary: `Get ${one}` },
    create: { summary: `Create ${many}`, description: 'One object, or `{"object": "list", "values": […]}` of up to 1,000, created all or nothing.' },
    update_many: { summary: `Update many ${many}`, description: 'A list body `{"object": "list", "values": [{"id": …, …}]}`, or `mode=query` with filters: every match gets the body\'s fields.' },
    delete_many: { summary: `Delete many ${many}`, description: 'A list body `{"object": "list", "values": [{"id": …}]}`, or `mode=query` with filters (`id=a|b`). Answers what was deleted.' },
    update: { summary: `Update ${one}` },
    delete: { summary: `Delete ${one}`, description: 'Answers the deleted object.' },
  };
}

function operationsOf(collection: Collection, version: Version): Record<string, Schema> {
  const name = schemaName(collection);
  const tag = [collection.path];
  const samples = curlSamples(collection, version);
  const texts = operationTexts(collection, version);
  const sample = (operation: OperationName) => ({ ...texts[operation], 'x-codeSamples': [{ lang: 'Shell', label: 'curl', source: samples[operation] }] });
  const ok = (schema: Schema) => ({ '200': { description: 'OK', content: json(schema) }, ...ERRORS });
  const one = ref(name);
  const many = listOf(name);
  const writeBody = (schema: Schema) => ({ required: true, content: { ...json(schema), 'application/x-www-form-urlencoded': { schema }, 'multipart/form-data': { schema } } });
  const bulk = (item: Schema) => ({ type: 'object', required: ['object', 'values'], properties: { object: { const: 'list' }, values: { type: 'array', maxItems: 1000, items: item } } });
  const collectionPath: Schema = {
    get: { tags: tag, operationId: `list_${collection.path}`, parameters: [VERSION_HEADER, ...QUERY_PARAMETERS], responses: ok(many), ...sample('list') },
  };
  const itemPath: Schema = {
    get: { tags: tag, operationId: `get_${collection.path}`, parameters: [ID, VERSION_HEADER, QUERY_PARAMETERS[0]], responses: ok(one), ...sample('get') },
  };
  if (!collection.readOnly) {
    const create = ref(schemaName(collection, 'Create'));
    const update = ref(schemaName(collection, 'Update'));
    collectionPath.post = { tags: tag, operationId: `create_${collection.path}`, parameters: [VERSION_HEADER, IDEMPOTENCY], requestBody: writeBody({ oneOf: [create, bulk(create)] }), responses: ok({ oneOf: [one, many] }), ...sample('create') };
    collectionPath.put = { tags: tag, operationId: `update_many_${collection.path}`, parameters: [VERSION_HEADER, IDEMPOTENCY, MODE, ...QUERY_PARAMETERS], requestBody: writeBody({ oneOf: [update, bulk({ allOf: [update, { required: ['id'], properties: { id: { type: 'string' } } }] })] }), responses: ok(many), ...sample('update_many') };
    collectionPath.delete = { tags: tag, operationId: `delete_many_${collection.path}`, parameters: [VERSION_HEADER, MODE, ...QUERY_PARAMETERS], responses: ok(many), ...sample('delete_many') };
    itemPath.put = { tags: tag, operationId: `update_${collection.path}`, parameters: [ID, VERSION_HEADER, IDEMPOTENCY], requestBody: writeBody(update), responses: ok(one), ...sample('update') };
    itemPath.delete = { tags: tag, operationId: `delete_${collection.path}`, parameters: [ID, VERSION_HEADER], responses: ok(one), ...sample('delete') };
  }
  return { [`/${collection.path}`]: collectionPath, [`/${collection.path}/{id}`]: itemPath };
}

/**
 * The request log (CONTRACT §20) lives in the reporting store, not the registry: described like a
 * read-only collection, but only its list is served (api/http/requestLog.ts).
 */
const REQUEST_LOGS: Collection = { path: 'request_logs', family: requestLogs, readOnly: true, newestFirst: true };

function requestLogPaths(version: Version): Record<string, Schema> {
  const path = `/${REQUEST_LOGS.path}`;
  const list = operationsOf(REQUEST_LOGS, version)[path] as { get: Schema };
  list.get.description = 'Every API request of the key\'s environment, newest first, kept 30 days (`SETTLE_REQUEST_LOG_RETENTION`) in the reporting store. \
Filters, `q`, `fields` aggregates and `group_by` as on other lists (`fields=status,count&group_by=status`); a secret key only. \
ServiceUnavailable while the reporting process is down (the requests themselves are still logged, and stored once it is back).';
  return { [path]: list };
}

/** What every collection shares, once, ahead of the collections (the reference shows it as its first pages). */
function introduction(version: Version): string {
  const other = version === 'v1' ? 'v2' : 'v1';
  return `Interface version ${version}: send \`X-API-Version: ${version}\`${version === 'v1' ? ' (or nothing: v1 is the default)' : ''}. \
Both versions read and write the same objects under the same ids; [the ${other} reference](/docs?version=${other}) shows the other view.

# Authentication

HTTP Basic with a secret key as the user name and an empty password, or \`Authorization: Bearer <key>\`. \
The key alone chooses the environment: \`test_secret_key_…\` works on test data, \`secret_key_…\` on live data. \
Browser elements use client tokens (\`POST /access_tokens\`) instead, which may only do what their intent allows. \
The examples use two shell variables:

\`\`\`sh
export SETTLE_URL=http://127.0.0.1:8080
export SETTLE_KEY=test_secret_key_…   # printed by npm start, or made with npx settle keys create
\`\`\`

# Requests and answers

- Bodies are JSON, form-encoded with bracketed keys (\`payment_method[card][card_number]=4242…\`) or multipart; all three mean the same.
- Every success is HTTP 200 with an \`object\` key, a delete too (it answers the deleted object). A list is \`{"object": "list", "values": […]}\`.
- A create or update takes one object or \`{"object": "list", "values": […]}\` of up to 1,000, all or nothing.
- Money is in major units (\`19.99\`), rounded half-up to the cent; timestamps are UTC \`YYYY-MM-DD HH:MM:SS\`.
- \`Idempotency-Key\` on a POST or PUT: the same key with the same body, sent with the same key or client token within 24 h, answers the stored response again; with another body, 409; another credential's request runs as its own.
- Each key may make 1,000 requests a second (bursts of 2,000) unless the operator says otherwise; beyond that, 429 with \`Retry-After\`.

# Lists and queries

- **Filters**: \`field=value\`, the operator at the start of the value: \`!v\`, \`<v\`, \`<=v\`, \`>v\`, \`>=v\`, \`?*v*\` (like, \`*\` is the wildcard), \`a|b\` (or). \
A repeated key is and (\`amount=>100&amount=<1000\`). Nested fields \`a[b]\`, custom attributes \`attrs[name]\`, functions \`month(created_at)=3\`.
- **\`q\`**: one expression, \`amount > 100 && (status == "processed" || status == "authorized")\`, with \`== != > >= < <= ?\`, \`&& || !\`, \`date(2025-01-31)\`, \`null\` and the same functions.
- **\`fields\`**: \`fields=id,amount\`; \`*\` stands for the default fields, so \`fields=*,ledger\` adds a non-default one.
- **\`group_by\`** with aggregates in \`fields\` (\`sum avg count min max stddev variance\`): \`fields=status,sum(amount),count&group_by=status\` answers one row per group.
- **\`order_by\`**: \`order_by=desc(created_at)\`; the default is \`created_at\`, then \`id\`. **\`limit\`** (default 1,000, at most 10,000) and **\`offset\`**.
- Updating or deleting every object that matches the filters needs \`mode=query\`.

# Errors

\`{"object": "error", "error_type": "InvalidAttributes", "error_description": "amount", "details": {"amount": "Required"}}\`: \
\`error_type\` is one of \`BadRequest\`, \`InvalidAttributes\`, \`TransactionDeclined\` (400), \`Unauthorized\` (401), \`Forbidden\` (403), \
\`NotFound\` (404, also for another org's ids), \`Conflict\` (409), \`PayloadTooLarge\` (413), \`TooManyRequests\` (429), \`ServiceUnavailable\` (503).`;
}

export function openApiDocument(version: Version): Schema {
  const schemas: Record<string, Schema> = {
    Error: {
      type: 'object',
      required: ['object', 'error_type', 'error_description'],
      properties: {
        object: { const: 'error' },
        error_type: { type: 'string', enum: ['BadRequest', 'InvalidAttributes', 'TransactionDeclined', 'Unauthorized', 'Forbidden', 'NotFound', 'Conflict', 'PayloadTooLarge', 'TooManyRequests', 'ServiceUnavailable', 'InternalServerError'] },
        error_description: { type: 'string' },
        details: { type: 'object', additionalProperties: true, description: 'Offending fields mapped to their reasons (bracket paths in the description)' },
      },
    },
  };
  const paths: Record<string, Schema> = {};
  for (const collection of collections) {
    schemas[schemaName(collection)] = objectSchema(collection, version, 'read');
    if (!collection.readOnly) {
      schemas[schemaName(collection, 'Create')] = objectSchema(collection, version, 'create');
      schemas[schemaName(collection, 'Update')] = objectSchema(collection, version, 'update');
    }
    Object.assign(paths, operationsOf(collection, version));
  }
  Object.assign(paths, webhookActionPaths(version));
  Object.assign(paths, paymentLinkActionPaths(version));
  Object.assign(paths, invoiceActionPaths(version));
  schemas[schemaName(REQUEST_LOGS)] = objectSchema(REQUEST_LOGS, version, 'read');
  Object.assign(paths, requestLogPaths(version));
  return {
    openapi: '3.1.0',
    info: { title: 'Settle payments API', version, description: introduction(version) },
    servers: [{ url: '/' }],
    security: [{ basicAuth: [] }, { bearerAuth: [] }],
    tags: [...collections, REQUEST_LOGS].map((collection) => tagOf(collection, version)),
    paths,
    components: {
      schemas,
      securitySchemes: {
        basicAuth: { type: 'http', scheme: 'basic', description: 'The secret key as the username, an empty password' },
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'A secret key, or a client token for browser elements' },
      },
    },
  };
}
