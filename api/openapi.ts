/**
 * The OpenAPI 3.1 description of one interface version, generated from the object registry: every
 * collection with the generic operations and query parameters, every field with its type, enum,
 * read-only/write-only flags, required-on-create and non-default (`x-non-default`) marks, and the
 * error format. Nothing here is written by hand per family, so it cannot drift from the engine.
 */
import { apiPath, appliesTo, type Collection, type FieldSpec, type Version } from './engine/family.ts';
import { acceptedValues } from './engine/values.ts';
import { collections } from './families/index.ts';

type Schema = Record<string, unknown>;

const TIMESTAMP_PATTERN = '^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}$';

function fieldSchema(field: FieldSpec, version: Version): Schema {
  const schema: Schema = (() => {
    switch (field.type) {
      case 'integer': return { type: 'integer', ...(field.min !== undefined && { minimum: field.min }), ...(field.max !== undefined && { maximum: field.max }) };
      case 'number': return { type: 'number' };
      case 'money': return { type: 'number', exclusiveMinimum: 0, description: 'Amount in major units; more than two decimals are rounded half-up to the cent' };
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
  return root;
}

function schemaName(collection: Collection, suffix = ''): string {
  return collection.path.split('_').map((p) => p[0].toUpperCase() + p.slice(1)).join('') + suffix;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Schema) => ({ 'application/json': { schema } });

const QUERY_PARAMETERS: Schema[] = [
  { name: 'fields', in: 'query', schema: { type: 'string' }, description: 'Comma-separated fields or expressions; `*` adds to the defaults; aggregates with `group_by`' },
  { name: 'q', in: 'query', schema: { type: 'string' }, description: 'A filter expression (CONTRACT §5)' },
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

function operationsOf(collection: Collection): Record<string, Schema> {
  const name = schemaName(collection);
  const tag = [collection.path];
  const ok = (schema: Schema) => ({ '200': { description: 'OK', content: json(schema) }, ...ERRORS });
  const one = ref(name);
  const many = listOf(name);
  const writeBody = (schema: Schema) => ({ required: true, content: { ...json(schema), 'application/x-www-form-urlencoded': { schema }, 'multipart/form-data': { schema } } });
  const bulk = (item: Schema) => ({ type: 'object', required: ['object', 'values'], properties: { object: { const: 'list' }, values: { type: 'array', maxItems: 1000, items: item } } });
  const collectionPath: Schema = {
    get: { tags: tag, operationId: `list_${collection.path}`, parameters: [VERSION_HEADER, ...QUERY_PARAMETERS], responses: ok(many) },
  };
  const itemPath: Schema = {
    get: { tags: tag, operationId: `get_${collection.path}`, parameters: [ID, VERSION_HEADER, QUERY_PARAMETERS[0]], responses: ok(one) },
  };
  if (!collection.readOnly) {
    const create = ref(schemaName(collection, 'Create'));
    const update = ref(schemaName(collection, 'Update'));
    collectionPath.post = { tags: tag, operationId: `create_${collection.path}`, parameters: [VERSION_HEADER, IDEMPOTENCY], requestBody: writeBody({ oneOf: [create, bulk(create)] }), responses: ok({ oneOf: [one, many] }) };
    collectionPath.put = { tags: tag, operationId: `update_many_${collection.path}`, parameters: [VERSION_HEADER, IDEMPOTENCY, MODE, ...QUERY_PARAMETERS], requestBody: writeBody({ oneOf: [update, bulk({ allOf: [update, { required: ['id'], properties: { id: { type: 'string' } } }] })] }), responses: ok(many) };
    collectionPath.delete = { tags: tag, operationId: `delete_many_${collection.path}`, parameters: [VERSION_HEADER, MODE, ...QUERY_PARAMETERS], responses: ok(many) };
    itemPath.put = { tags: tag, operationId: `update_${collection.path}`, parameters: [ID, VERSION_HEADER, IDEMPOTENCY], requestBody: writeBody(update), responses: ok(one) };
    itemPath.delete = { tags: tag, operationId: `delete_${collection.path}`, parameters: [ID, VERSION_HEADER], responses: ok(one) };
  }
  return { [`/${collection.path}`]: collectionPath, [`/${collection.path}/{id}`]: itemPath };
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
    Object.assign(paths, operationsOf(collection));
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Settle payments API', version, description: `Interface version ${version} (send \`X-API-Version: ${version}\`). Every success is HTTP 200 with an \`object\` key.` },
    servers: [{ url: '/' }],
    security: [{ basicAuth: [] }, { bearerAuth: [] }],
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
