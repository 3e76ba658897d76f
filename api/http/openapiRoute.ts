/** `GET /openapi.json?version=v1|v2`: the API description, public like the docs it replaces. */
import type { Context, Next } from 'koa';
import type { Version } from '../engine/family.ts';
import { badRequest } from '../errors.ts';
import { openApiDocument } from '../openapi.ts';

const documents = new Map<Version, Record<string, unknown>>();

export async function openApiRoute(ctx: Context, next: Next): Promise<void> {
  if (ctx.path !== '/openapi.json' || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
  const requested = ctx.query.version ?? 'v1';
  if (requested !== 'v1' && requested !== 'v2') throw badRequest('version must be v1 or v2', { version: 'Must be v1 or v2' });
  let document = documents.get(requested);
  if (!document) documents.set(requested, (document = openApiDocument(requested)));
  ctx.set('Cache-Control', 'public, max-age=300');
  ctx.body = document;
}
