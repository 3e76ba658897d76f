/**
 * Every outgoing request (deliveries and OAuth token requests) goes through these agents: they
 * resolve the host and refuse private, loopback, link-local, CGNAT and metadata addresses on the
 * address actually dialled (unless WEBHOOK_ALLOW_PRIVATE), reuse connections, follow no redirects.
 * An answer is read only up to a bound: what a receiver streams past it is never buffered.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import got, { type Got, type OptionsInit, type PlainResponse } from 'got';
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

export interface BoundedAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  /** the first bytes of the answer's body, at most the bound */
  body: Buffer;
  /** the rest of the body was not read: past the bound, or broken off after the status */
  cut: boolean;
}

/**
 * Sends a request and reads its answer up to `limit` bytes; past that the connection is closed.
 * Once the status has arrived, a body that breaks off or times out still makes an answer.
 */
export function requestBounded(http: Got, url: string, options: OptionsInit, limit: number): Promise<BoundedAnswer> {
  return new Promise((resolve, reject) => {
    const request = http.stream(url, options);
    const chunks: Buffer[] = [];
    let size = 0;
    let response: PlainResponse | undefined;
    let settled = false;
    const settle = (cut: boolean) => {
      if (settled || !response) return;
      settled = true;
      // A cut answer's connection still carries the rest of the body: it cannot be reused.
      if (cut) request.destroy();
      resolve({ statusCode: response.statusCode, headers: response.headers, body: Buffer.concat(chunks, size), cut });
    };
    request.on('response', (answer: PlainResponse) => (response = answer));
    request.on('data', (chunk: Buffer) => {
      if (settled) return;
      const room = limit - size;
      chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
      size += Math.min(chunk.length, room);
      if (chunk.length > room) settle(true);
    });
    request.on('end', () => settle(false));
    request.on('error', (error: Error) => {
      if (response) settle(true);
      else if (!settled) {
        settled = true;
        reject(error);
      }
    });
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
