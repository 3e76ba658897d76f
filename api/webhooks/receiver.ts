/**
 * Receiver kit for integrators: verify a Settle webhook and drop retries you have already seen.
 *
 *   import { createWebhookReceiver } from 'settle/api/webhooks/receiver.ts';
 *   const receive = createWebhookReceiver({ secret: process.env.SETTLE_WEBHOOK_SECRET });
 *   // in your HTTP handler, with the raw body bytes exactly as received:
 *   const { status, event, duplicate, stale } = receive(rawBody, request.headers);
 *   // answer `status` (200 on a good signature, 401 otherwise); act on `event` unless `duplicate` or `stale`.
 *
 * Signatures are compared in constant time on the raw body (never on re-serialised JSON). During
 * a secret rotation give both secrets (`secret: [newer, older]`): `webhook-signature` carries a
 * signature under each while the older one lasts, `X-Service-Signature` the newer one's.
 * Events are deduplicated on their id (`X-Service-Event-Id`, the same on every retry), and an
 * event whose `sequence` is not above the highest applied for its object is `stale`.
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
  /** true when a later change of the same object was applied already: answer 200 and do nothing */
  stale: boolean;
}

export interface ReceiverOptions {
  /** the webhook's sender_secret; during a rotation the new and the old one */
  secret: string | string[];
  /** ids seen so far; bring your own durable set in production. Default: in memory, bounded. */
  seen?: { has(id: string): boolean; add(id: string): unknown };
  /** the highest sequence applied per object id; bring your own durable map in production. Default: in memory. */
  applied?: { get(objectId: string): number | undefined; set(objectId: string, sequence: number): unknown };
}

/** True when either header carries a signature under one of the secrets. */
function signedByOneOf(secrets: string[], rawBody: string | Buffer, headers: Headers): boolean {
  return secrets.some((secret) => verifyServiceSignature(secret, rawBody, header(headers, 'x-service-signature'))
    || verifyStandardWebhook(secret, rawBody, headers));
}

export function createWebhookReceiver(options: ReceiverOptions): (rawBody: string | Buffer, headers: Headers) => ReceivedWebhook {
  const seen = options.seen ?? boundedSet(100_000);
  const applied = options.applied ?? new Map<string, number>();
  const secrets = Array.isArray(options.secret) ? options.secret : [options.secret];
  return (rawBody, headers) => {
    if (!signedByOneOf(secrets, rawBody, headers)) return { status: 401, duplicate: false, stale: false };
    const event = JSON.parse(rawBody.toString()) as ReceivedWebhook['event'] & {};
    const id = header(headers, 'x-service-event-id') ?? event.event_id;
    const duplicate = seen.has(id);
    if (!duplicate) seen.add(id);
    const sequence = Number(header(headers, 'x-service-sequence') ?? event.sequence);
    const objectId = event.triggered_on?.id;
    const highest = objectId === undefined ? undefined : applied.get(objectId);
    const stale = !duplicate && Number.isFinite(sequence) && highest !== undefined && sequence <= highest;
    if (!duplicate && !stale && objectId !== undefined && Number.isFinite(sequence)) applied.set(objectId, sequence);
    return { status: 200, event, duplicate, stale };
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
