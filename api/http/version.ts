/** `X-API-Version`: absent → v1; `v1`, `1`, `v1.<n>`, `v2`, … with an optional `-suffix` (CONTRACT §4). */
import type { Context, Next } from 'koa';
import type { Version } from '../engine/family.ts';
import { badRequest } from '../errors.ts';
import type { RequestState } from './state.ts';

const VERSION = /^v?([12])(\.\d+)?(-[A-Za-z0-9.]+)?$/;

export function parseVersion(header: string | undefined): Version {
  if (header === undefined || header === '') return 'v1';
  const match = VERSION.exec(header.trim());
  if (!match) throw badRequest('X-API-Version', { 'X-API-Version': 'Must be v1 or v2' });
  return match[1] === '2' ? 'v2' : 'v1';
}

export async function apiVersion(ctx: Context & { state: RequestState }, next: Next): Promise<void> {
  ctx.state.version = parseVersion(ctx.get('X-API-Version') || undefined);
  await next();
}
