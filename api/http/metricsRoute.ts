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
  const series = seriesOf(ctx.method, routeOf(ctx), ctx.status);
  series.requests.inc();
  series.duration.observe((performance.now() - startedMs) / 1000);
}

interface Series {
  requests: { inc: () => void };
  duration: { observe: (value: number) => void };
}

/** Each label set's children, kept: the registry would hash the labels on every call. */
const seriesByLabels = new Map<string, Series>();

function seriesOf(method: string, route: string, status: number): Series {
  const key = `${method} ${route} ${status}`;
  let series = seriesByLabels.get(key);
  if (!series) {
    const labels = { method, route, status: String(status) };
    series = { requests: httpRequests.labels(labels), duration: httpDuration.labels(labels) };
    seriesByLabels.set(key, series);
  }
  return series;
}

export async function metricsRoute(ctx: Context, next: Next): Promise<void> {
  if (ctx.path !== '/metrics' || ctx.method !== 'GET') return next();
  const { contentType, body } = await metricsText();
  ctx.type = contentType;
  ctx.body = body;
}
