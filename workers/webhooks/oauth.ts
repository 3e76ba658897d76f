/**
 * OAuth 2.0 client-credentials tokens for webhook deliveries: fetched from `auth_url`, cached per
 * webhook until shortly before expiry, one fetch shared by every concurrent delivery.
 */
import { createHash } from 'node:crypto';
import type { LookupFunction } from 'node:net';
import { answerText, type BoundedAnswer, type Outbound } from './outbound.ts';

export interface OAuthParams {
  auth_url: string;
  client_id: string;
  client_secret: string;
  grant_type: string;
  resource?: string | null;
  scope?: string | null;
}

export type TokenResult = { ok: true; token: string; status: number } | { ok: false; status: number | null; error: string };

interface Cached {
  token: string;
  refreshAt: number;
}

const DEFAULT_LIFETIME_S = 3600;
/** A token endpoint's answer is read this far; a longer one is refused, never buffered. */
const TOKEN_ANSWER_LIMIT = 64 * 1024;

export class OAuthTokens {
  private readonly cache = new Map<string, Cached>();
  private readonly inflight = new Map<string, Promise<TokenResult>>();
  private readonly http: Outbound;
  private readonly clock: () => Date;

  /** `clock`: the worker's (seams.clock), which token lifetimes are counted by. */
  constructor(http: Outbound, clock: () => Date = () => new Date()) {
    this.http = http;
    this.clock = clock;
  }

  private now(): number {
    return this.clock().getTime();
  }

  /** Changed credentials mean another cache entry: a rotated secret is never served a stale token. */
  private key(webhookId: string, params: OAuthParams): string {
    return webhookId + ':' + createHash('sha256').update(JSON.stringify(params)).digest('hex');
  }

  /** `dnsLookup`: the lookup of the tenant asking (see dnsLookup.ts). */
  async token(webhookId: string, params: OAuthParams, dnsLookup?: LookupFunction): Promise<TokenResult> {
    const key = this.key(webhookId, params);
    const cached = this.cache.get(key);
    if (cached && cached.refreshAt > this.now()) return { ok: true, token: cached.token, status: 200 };
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.fetch(key, params, dnsLookup).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    return pending;
  }

  /** After a 401 from the receiver: the next delivery fetches a fresh token. */
  drop(webhookId: string, params: OAuthParams): void {
    this.cache.delete(this.key(webhookId, params));
  }

  private async fetch(key: string, params: OAuthParams, dnsLookup?: LookupFunction): Promise<TokenResult> {
    const form: Record<string, string> = { grant_type: params.grant_type, client_id: params.client_id, client_secret: params.client_secret };
    if (params.resource) form.resource = params.resource;
    if (params.scope) form.scope = params.scope;
    let response: BoundedAnswer;
    try {
      response = await this.http.request(params.auth_url, {
        method: 'POST', body: new URLSearchParams(form).toString(), headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' }, dnsLookup,
      }, TOKEN_ANSWER_LIMIT);
    } catch (error) {
      return { ok: false, status: null, error: `token request failed: ${error instanceof Error ? error.message.slice(0, 300) : 'error'}` };
    }
    if (response.statusCode < 200 || response.statusCode >= 300) return { ok: false, status: response.statusCode, error: `token endpoint answered ${response.statusCode}` };
    if (response.cut) return { ok: false, status: response.statusCode, error: `token endpoint answer incomplete or over ${TOKEN_ANSWER_LIMIT} bytes` };
    let body: { access_token?: unknown; expires_in?: unknown };
    try {
      body = JSON.parse(answerText(response.body));
    } catch {
      return { ok: false, status: response.statusCode, error: 'token endpoint answered no JSON' };
    }
    if (typeof body.access_token !== 'string' || body.access_token === '') return { ok: false, status: response.statusCode, error: 'token endpoint answered no access_token' };
    const lifetimeMs = (Number(body.expires_in) > 0 ? Number(body.expires_in) : DEFAULT_LIFETIME_S) * 1000;
    // Refresh a little early: a minute, or a tenth of a short lifetime.
    this.cache.set(key, { token: body.access_token, refreshAt: this.now() + lifetimeMs - Math.min(60_000, lifetimeMs / 10) });
    return { ok: true, token: body.access_token, status: response.statusCode };
  }
}
