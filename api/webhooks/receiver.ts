/**
 * Receiver kit for integrators: verify a Settle webhook and drop retries you have already seen.
 *
 *   import { createWebhookReceiver } from 'settle/api/webhooks/receiver.ts';
 *   const receive = createWebhookReceiver({ secret: process.env.SETTLE_WEBHOOK_SECRET });
 *   // in your HTTP handler, with the raw body bytes exactly as received:
 *   const { status, event, duplicate } = receive(rawBody, request.headers);
 *   // answer `status` (200 on a good signature, 401 otherwise); act on `event` unless `duplicate`.
 *
 * Signatures are compared in constant time on the raw body (never on re-serialised JSON).
 * Events are deduplicated on their id (`X-Service-Event-Id`, the same on every retry).
 */
import { safeEqual, serviceSignature, standardWebhooksSignature } from './signature.ts';

export type Headers = Record<string, string | string[] | undefined>;

function header(headers: Headers, name: string): string | undefined {
  const value = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** True when `X-Service-Signature` is the HMAC-SHA256 (hex) of `rawBody` under `secret`. */
export function verifyServiceSignature(secret: string, rawBody: string | Buffer, signature: string | undefined): boolean {
  if (!signature) return false;
  return safeEqual(serviceSignature(secret, rawBody), signature.trim().toLowerCase());
}

/**
 * True when one of the space-separated `webhook-signature` values matches and the timestamp is
 * within `toleranceSeconds` of now (replay protection).
 */
export function verifyStandardWebhook(secret: string, rawBody: string | Buffer, headers: Headers, nowSeconds = Math.floor(Date.now() / 1000), toleranceSeconds = 300): boolean {
  const id = header(headers, 'webhook-id');
  const timestamp = Number(header(headers, 'webhook-timestamp'));
  const signatures = header(headers, 'webhook-signature');
  if (!id || !Number.isInteger(timestamp) || !signatures) return false;
  if (Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = standardWebhooksSignature(secret, id, timestamp, rawBody);
  return signatures.split(' ').some((candidate) => safeEqual(candidate, expected));
}

export interface ReceivedWebhook {
  /** 200 when the signature matches, 401 when it does not */
  status: 200 | 401;
  /** the parsed event, when the signature matched */
  event?: { event_id: string; trigger: string; triggered_on: { id: string; object: string; value?: unknown } } & Record<string, unknown>;
  /** true when this event id was seen before: answer 200 and do nothing */
  duplicate: boolean;
}

export interface ReceiverOptions {
  secret: string;
  /** ids seen so far; bring your own durable set in production. Default: in memory, bounded. */
  seen?: { has(id: string): boolean; add(id: string): unknown };
}

export function createWebhookReceiver(options: ReceiverOptions): (rawBody: string | Buffer, headers: Headers) => ReceivedWebhook {
  const seen = options.seen ?? boundedSet(100_000);
  return (rawBody, headers) => {
    if (!verifyServiceSignature(options.secret, rawBody, header(headers, 'x-service-signature'))) return { status: 401, duplicate: false };
    const event = JSON.parse(rawBody.toString()) as ReceivedWebhook['event'] & {};
    const id = header(headers, 'x-service-event-id') ?? event.event_id;
    const duplicate = seen.has(id);
    if (!duplicate) seen.add(id);
    return { status: 200, event, duplicate };
  };
}

function boundedSet(limit: number): { has(id: string): boolean; add(id: string): void } {
  const ids = new Set<string>();
  return {
    has: (id) => ids.has(id),
    add: (id) => {
      if (ids.size >= limit) ids.delete(ids.values().next().value as string);
      ids.add(id);
    },
  };
}
