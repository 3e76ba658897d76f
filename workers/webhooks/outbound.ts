/**
 * Every outgoing request (deliveries and OAuth token requests) goes through these agents: they
 * resolve the host and refuse private, loopback, link-local, CGNAT and metadata addresses on the
 * address actually dialled (unless WEBHOOK_ALLOW_PRIVATE), reuse connections, follow no redirects.
 */
import got, { type Got } from 'got';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';

export interface OutboundOptions {
  allowPrivate: boolean;
  timeoutMs: number;
}

export function createOutbound(options: OutboundOptions): Got {
  const filtering = { allowPrivateIPAddress: options.allowPrivate, allowMetaIPAddress: false, keepAlive: true, maxSockets: 256, maxFreeSockets: 64 };
  return got.extend({
    agent: { http: new RequestFilteringHttpAgent(filtering), https: new RequestFilteringHttpsAgent(filtering) },
    followRedirect: false,
    throwHttpErrors: false,
    retry: { limit: 0 },
    timeout: { request: options.timeoutMs },
    headers: { 'user-agent': 'Settle-Webhooks/1' },
  });
}

/** The message of a refused or failed request, without anything secret in it. */
export function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (/is not allowed|private IP|meta IP/i.test(message)) return `refused: the address is private or reserved (${message.replace(/^.*?DNS lookup /, '')})`;
  if ((error as { code?: string }).code === 'ETIMEDOUT') return 'timed out';
  return message.slice(0, 500);
}
