/**
 * Secret-key authentication: HTTP Basic (key as username, empty password) or Bearer. Keys are
 * looked up by SHA-256 hash; a short-lived cache spares the database a query per request.
 */
import type { Context, Next } from 'koa';
import { findActiveKeyByHash, type KeyRecord } from '../db/keys.ts';
import { unauthorized } from '../errors.ts';
import { findActiveAccessToken } from '../db/accessTokens.ts';
import { clientTokenScopes } from '../families/index.ts';
import { forbidden } from '../errors.ts';
import { hashKey, hashKeyHex, isClientToken, keyEnvironment, shownPrefix } from '../keys.ts';
import { grants, neededScope, readableTypes } from '../scopes.ts';
import type { RequestState } from './state.ts';

export function credentialFrom(header: string | undefined): string | null {
  if (!header) return null;
  const [scheme, value] = header.trim().split(/\s+/, 2);
  if (!value) return null;
  if (scheme.toLowerCase() === 'bearer') return value;
  if (scheme.toLowerCase() !== 'basic') return null;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 ? decoded : decoded.slice(0, colon);
}

/** A key's lookup, shared by the requests that arrive while it runs (one query when an entry expires under load). */
interface CacheEntry {
  key: Promise<KeyRecord | null>;
  expires: number;
}

export function createAuthenticator(cacheMs: number) {
  const cache = new Map<string, CacheEntry>();
  return async function authenticate(ctx: Context & { state: RequestState }, next: Next): Promise<void> {
    const secret = credentialFrom(ctx.get('Authorization') || undefined);
    if (!secret) throw unauthorized('Missing API key: use HTTP Basic with the secret key as username, or Bearer');
    if (!keyEnvironment(secret) || secret.length > 128) throw unauthorized('Invalid API key');
    ctx.state.keyPrefix = shownPrefix(secret);
    if (isClientToken(secret)) return authenticateClient(ctx, next, hashKey(secret));
    const cacheKey = hashKeyHex(secret);
    const now = Date.now();
    let entry = cache.get(cacheKey);
    if (!entry || entry.expires < now) {
      const made: CacheEntry = { key: findActiveKeyByHash(ctx.state.services.db, Buffer.from(cacheKey, 'hex')), expires: now + cacheMs };
      entry = made;
      if (cacheMs > 0) {
        if (cache.size > 10000) cache.clear();
        cache.set(cacheKey, made);
        // A failed lookup is not kept: the next request asks again.
        made.key.catch(() => {
          if (cache.get(cacheKey) === made) cache.delete(cacheKey);
        });
      }
    }
    const key = await entry.key;
    // A rolled key's grace ends on time, cached or not.
    if (!key || (key.expires_at && new Date(key.expires_at).getTime() <= now)) throw unauthorized('Invalid or revoked API key');
    ctx.state.key = key;
    ctx.state.tenant = { orgId: key.org_id, environment: key.environment };
    ctx.state.principal = { kind: 'secret', keyId: key.id, settings: key.settings };
    ctx.state.bindLog({ org: key.org_id, env: key.environment });
    await next();
  };
}

/** Client tokens are looked up every time: they are single-use and short-lived. */
async function authenticateClient(ctx: Context & { state: RequestState }, next: Next, hash: Buffer): Promise<void> {
  const token = await findActiveAccessToken(ctx.state.services.db, hash);
  if (!token) throw unauthorized('Invalid or expired client token');
  ctx.state.tenant = { orgId: token.org_id, environment: token.environment };
  ctx.state.principal = { kind: 'client', tokenId: hash.toString('hex'), intent: token.intent, paymentLinkId: token.payment_link_id ?? undefined };
  ctx.state.bindLog({ org: token.org_id, env: token.environment, client: true });
  await next();
}

/** Every route some client token may call: the only routes a browser on another origin may reach (CORS). */
export function clientTokenRoutes(): Array<[string, string]> {
  const all = Object.values(clientTokenScopes).flat();
  return all.filter(([method, path], i) => all.findIndex(([m, p]) => m === method && p === path) === i);
}

/** A restricted key reaches only the collections its scopes name: elsewhere 403 naming the scope it lacks. */
export async function keyScope(ctx: Context & { state: RequestState }, next: Next): Promise<void> {
  const scopes = ctx.state.key?.scopes ?? null;
  if (ctx.state.principal?.kind === 'secret' && scopes !== null) {
    const needed = neededScope(ctx.method, ctx.path);
    if (!grants(scopes, needed)) {
      // A read of a collection the key may read one kind of (accounts: customers) shows that kind only.
      const types = ctx.method === 'GET' ? readableTypes(scopes, ctx.path) : [];
      if (types.length !== 1) throw forbidden(`This key lacks the scope ${needed}`, { scope: needed });
      ctx.state.readableType = types[0];
    }
  }
  await next();
}

export async function clientScope(ctx: Context & { state: RequestState }, next: Next): Promise<void> {
  const principal = ctx.state.principal;
  if (principal?.kind === 'client') {
    const kind = Object.keys(principal.intent)[0] ?? 'none';
    // What each intent kind may do is declared by the families (api/families/index.ts); everything else is 403.
    const allowed = (clientTokenScopes[kind] ?? []).some(([method, path]) => ctx.method === method && ctx.path === path);
    if (!allowed) throw forbidden(`A ${kind} client token may not ${ctx.method} ${ctx.path}`);
  }
  await next();
}
