/**
 * Every outgoing request (deliveries and OAuth token requests) goes through these agents: they
 * resolve the host and refuse private, loopback, link-local, CGNAT and metadata addresses on the
 * address actually dialled (unless WEBHOOK_ALLOW_PRIVATE), keep connections alive for the next
 * request to the same host, follow no redirects. An answer is read only up to a bound: what a
 * receiver streams past it is never buffered.
 *
 * Plain node:http on the filtering agents: a general-purpose client (got) cost a third of the
 * worker's CPU per delivery in a profile, for features (retries, redirects, hooks) we turn off.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import type { BoundedAnswer, Outbound, OutboundRequest } from '../../api/seams.ts';

export interface OutboundOptions {
  allowPrivate: boolean;
  timeoutMs: number;
}

export type { BoundedAnswer, Outbound, OutboundRequest } from '../../api/seams.ts';

const USER_AGENT = 'Settle-Webhooks/1';

export function createOutbound(options: OutboundOptions): Outbound {
  // Every socket a receiver was sent on stays open for the next: a backlog goes out in rounds of up
  // to COMPANIONS_MAX requests per org (tenantSlots.ts), and closing those past a smaller pool of free
  // sockets made each round connect again.
  const filtering = { allowPrivateIPAddress: options.allowPrivate, allowMetaIPAddress: false, keepAlive: true, maxSockets: 256, maxFreeSockets: 256 };
  const agents = { http: new RequestFilteringHttpAgent(filtering), https: new RequestFilteringHttpsAgent(filtering) };
  return { request: (url, request, limit) => requestBounded(agents, options.timeoutMs, url, request, limit) };
}

function timedOut(ms: number): Error {
  return Object.assign(new Error(`Timeout awaiting 'request' for ${ms}ms`), { code: 'ETIMEDOUT' });
}

function requestBounded(agents: { http: http.Agent; https: https.Agent }, timeoutMs: number, url: string, request: OutboundRequest, limit: number): Promise<BoundedAnswer> {
  return new Promise((resolve, reject) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return reject(new Error(`Invalid URL: ${url.slice(0, 200)}`));
    }
    const secure = target.protocol === 'https:';
    if (!secure && target.protocol !== 'http:') return reject(new Error(`Unsupported protocol "${target.protocol}"`));
    const headers: Record<string, string | number> = { 'user-agent': USER_AGENT, ...request.headers };
    if (request.body !== undefined) headers['content-length'] = Buffer.byteLength(request.body);
    const chunks: Buffer[] = [];
    let size = 0;
    let response: IncomingMessage | undefined;
    let settled = false;
    const settle = (cut: boolean) => {
      if (settled || !response) return;
      settled = true;
      clearTimeout(timer);
      // A cut answer's connection still carries the rest of the body: it cannot be reused.
      if (cut) outgoing.destroy();
      resolve({ statusCode: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks, size), cut });
    };
    const fail = (error: Error) => {
      if (response) return settle(true);
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(error);
    };
    const outgoing = (secure ? https : http).request(target, {
      method: request.method, headers, agent: secure ? agents.https : agents.http, lookup: request.dnsLookup,
    });
    const timer = setTimeout(() => outgoing.destroy(timedOut(timeoutMs)), timeoutMs);
    outgoing.on('error', fail);
    outgoing.on('response', (answer: IncomingMessage) => {
      response = answer;
      answer.on('data', (chunk: Buffer) => {
        if (settled) return;
        const room = limit - size;
        chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
        size += Math.min(chunk.length, room);
        if (chunk.length > room) settle(true);
      });
      answer.on('end', () => settle(false));
      answer.on('error', () => settle(true));
      answer.on('close', () => settle(!answer.complete));
    });
    outgoing.end(request.body);
  });
}

/** An answer's bytes as text for a log: whole characters only, and no NUL (which jsonb refuses). */
export function answerText(body: Buffer): string {
  return new StringDecoder('utf8').write(body).replaceAll('\u0000', '');
}

/** The message of a refused or failed request, without anything secret in it. */
export function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (/is not allowed|private IP|meta IP/i.test(message)) return `refused: the address is private or reserved (${message.replace(/^.*?DNS lookup /, '')})`;
  if ((error as { code?: string }).code === 'ETIMEDOUT') return 'timed out';
  return message.slice(0, 500);
}
