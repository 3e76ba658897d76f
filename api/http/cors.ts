/**
 * CORS for client-token requests only (CONTRACT §16): a browser on a merchant's origin may call
 * the routes a client token can use, with a client token. A response to a secret key never carries
 * CORS headers, so no other origin's script can read it, and preflights are answered only for the
 * client-token routes.
 */
import type { Context, Next } from 'koa';
import { isClientToken } from '../keys.ts';
import { clientTokenRoutes, credentialFrom } from './auth.ts';

const ALLOWED_HEADERS = 'Authorization, Content-Type, X-API-Version, Idempotency-Key';

function allowOrigin(ctx: Context, origin: string): void {
  ctx.set('Access-Control-Allow-Origin', origin);
  ctx.vary('Origin');
}

export async function clientTokenCors(ctx: Context, next: Next): Promise<void> {
  const origin = ctx.get('Origin');
  if (!origin) return next();
  const requested = ctx.get('Access-Control-Request-Method');
  if (ctx.method === 'OPTIONS' && requested) {
    const routes = clientTokenRoutes().filter(([, path]) => path === ctx.path);
    if (routes.length === 0) return next();
    allowOrigin(ctx, origin);
    ctx.set('Access-Control-Allow-Methods', [...new Set(routes.map(([method]) => method))].join(', '));
    ctx.set('Access-Control-Allow-Headers', ALLOWED_HEADERS);
    ctx.set('Access-Control-Max-Age', '600');
    ctx.status = 204;
    return;
  }
  try {
    await next();
  } finally {
    // Errors too (they are answered further in): a browser form must read its field errors.
    const credential = credentialFrom(ctx.get('Authorization') || undefined);
    if (credential && isClientToken(credential)) allowOrigin(ctx, origin);
  }
}
