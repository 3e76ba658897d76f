/**
 * Collections the client libraries list that are not object families (CONTRACT §18):
 * `/accounts/orgs` (the caller's org), `/users` (the org's keys in this environment, prefixes
 * only), and collections this service keeps empty for now (`/app_settings`, `/processing_rules`,
 * `/processing_agreements`, `/check_fronts`, `/check_backs`). All read-only; the query string is
 * still parsed, so a malformed one is the same 400 as anywhere else.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { listOrgKeys } from '../db/keys.ts';
import { formatTimestamp } from '../schema/values.ts';
import { badRequest, forbidden, notFound } from '../errors.ts';
import { parseListQuery } from '../query/listQuery.ts';
import type { RequestState } from './state.ts';

type Ctx = Context & { state: RequestState };

/** Known to the libraries, nothing stored in them yet: an empty list, never a 404. */
const EMPTY_COLLECTIONS = ['app_settings', 'processing_rules', 'processing_agreements', 'check_fronts', 'check_backs'];

function page<T>(ctx: Ctx, values: T[]): { object: 'list'; values: T[] } {
  const query = parseListQuery([...new URLSearchParams(ctx.querystring)]);
  return { object: 'list', values: values.slice(query.offset, query.offset + query.limit) };
}

function secretKeyOf(ctx: Ctx) {
  const key = ctx.state.key;
  if (!key) throw forbidden('Only a secret key may read this');
  return key;
}

function readOnly(path: string) {
  return () => {
    throw badRequest(`/${path} is read-only`, { method: 'Only GET is allowed here' });
  };
}

export function orgRoutes(): Router {
  const router = new Router();
  router.get('/accounts/orgs', (ctx) => {
    const c = ctx as Ctx;
    const key = secretKeyOf(c);
    c.body = page(c, [{ object: 'org', id: key.org_id, name: key.org_name }]);
  });
  router.get('/accounts/orgs/:id', (ctx) => {
    const key = secretKeyOf(ctx as Ctx);
    if (ctx.params.id !== key.org_id) throw notFound(`No org with id ${ctx.params.id}`);
    ctx.body = { object: 'org', id: key.org_id, name: key.org_name };
  });
  router.get('/users', async (ctx) => {
    const c = ctx as Ctx;
    const key = secretKeyOf(c);
    const keys = await listOrgKeys(c.state.services.db, key.org_id, key.environment);
    c.body = page(c, keys.map((k) => ({
      object: 'user', id: k.id, type: 'api_key', key_prefix: `${k.key_prefix}…`, environ: k.environment,
      status: k.revoked_at ? 'revoked' : 'active', created_at: formatTimestamp(k.created_at),
    })));
  });
  for (const path of EMPTY_COLLECTIONS) {
    router.get(`/${path}`, (ctx) => {
      ctx.body = page(ctx as Ctx, []);
    });
    router.get(`/${path}/:id`, (ctx) => {
      throw notFound(`No ${path.replace(/s$/, '')} with id ${ctx.params.id}`);
    });
  }
  for (const path of [...EMPTY_COLLECTIONS, 'accounts/orgs', 'users']) {
    for (const method of ['post', 'put', 'delete'] as const) router[method]([`/${path}`, `/${path}/:id`], readOnly(path));
  }
  return router;
}
