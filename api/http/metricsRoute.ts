/**
 * The web process's metrics: each request counted and timed by route template (the registered
 * collection, never a raw id, so the series stay few), and `GET /metrics` in Prometheus text.
 */
import type { Context, Next } from 'koa';
import { collectionByPath } from '../families/index.ts';
import { httpDuration, httpRequests, metricsText } from '../metrics.ts';

/** Paths answered outside the routers, kept as their own series. */
const FIXED_PATHS = new Set(['/healthz', '/metrics', '/openapi.json', '/client.js']);

export function routeOf(ctx: Context): string {
  const matched = (ctx as Context & { _matchedRoute?: unknown })._matchedRoute;
  if (typeof matched === 'string') {
    const collection = (ctx.params as Record<string, string> | undefined)?.collection;
    return collection && collectionByPath.has(collection) ? matched.replace(':collection', collection) : matched;
  }
  return FIXED_PATHS.has(ctx.path) ? ctx.path : 'unmatched';
}

/** Records the request once it has an answer (errors included: the error middleware runs inside). */
export function recordRequest(ctx: Context, startedMs: number): void {
  const labels = { method: ctx.method, route: routeOf(ctx), status: String(ctx.status) };
  httpRequests.inc(labels);
  httpDuration.observe(labels, (performance.now() - startedMs) / 1000);
}

export async function metricsRoute(ctx: Context, next: Next): Promise<void> {
  if (ctx.path !== '/metrics' || ctx.method !== 'GET') return next();
  const { contentType, body } = await metricsText();
  ctx.type = contentType;
  ctx.body = body;
}
