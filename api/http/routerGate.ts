/**
 * A router's middleware that steps aside at once for a path outside its routes: it reads the
 * first path segment of every route the router holds, and a request whose first segment is none
 * of them passes on without the router matching it against each route. The API's requests pass
 * half a dozen such routers (docs, browser pages, console, webhooks' extras, orgs, test clock)
 * before reaching the object routes. A router with a route that starts with a parameter or a
 * pattern is used as it is.
 */
import type Router from '@koa/router';
import type { Middleware } from 'koa';

export function firstSegmentGate(router: Router): Middleware {
  const routes = router.routes() as unknown as Middleware;
  const segments = new Set<string>();
  for (const layer of router.stack) {
    if (typeof layer.path !== 'string') return routes;
    const first = layer.path.split('/')[1] ?? '';
    if (first === '' || first.startsWith(':') || /[(*?+]/.test(first)) return routes;
    segments.add(first);
  }
  return (ctx, next) => {
    const end = ctx.path.indexOf('/', 1);
    return segments.has(end === -1 ? ctx.path.slice(1) : ctx.path.slice(1, end)) ? routes(ctx, next) : next();
  };
}
