/**
 * Webhook signatures: `X-Service-Signature` is the lowercase hex HMAC-SHA256 of the exact body
 * bytes under the webhook's secret, and `X-Payload-Signature` the same digest as `sha256=<hex>`
 * (the form integrations written against the hosted API verify); the Standard Webhooks
 * `webhook-signature` is `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed with the
 * base64-decoded part after `whsec_`.
 */
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';

/**
 * HMAC keys made once per secret: `createHmac` given a string or a Buffer converts it on every
 * call, ten times the cost of the HMAC of a delivery's body (71 µs against 7 µs per delivery, both
 * signatures). Bounded: past KEYS_KEPT secrets the cache starts again.
 */
const KEYS_KEPT = 10_000;
const keys = new Map<string, KeyObject>();

function hmacKey(cacheKey: string, make: () => Buffer): KeyObject {
  let key = keys.get(cacheKey);
  if (key === undefined) {
    key = createSecretKey(make());
    if (keys.size >= KEYS_KEPT) keys.clear();
    keys.set(cacheKey, key);
  }
  return key;
}

export function serviceSignature(secret: string, body: string | Buffer): string {
  return createHmac('sha256', hmacKey(`service:${secret}`, () => Buffer.from(secret, 'utf8'))).update(body).digest('hex');
}

/**
 * Every signature header of one delivery: `secrets[0]` is the webhook's current secret, any
 * further one a rotated-out secret still in its overlap (only `webhook-signature` carries those).
 */
export function signatureHeaders(secrets: string[], eventId: string, timestamp: number, body: string | Buffer): Record<string, string> {
  const hex = serviceSignature(secrets[0], body);
  return {
    'x-service-signature': hex,
    'x-payload-signature': `sha256=${hex}`,
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => standardWebhooksSignature(secret, eventId, timestamp, body)).join(' '),
  };
}

/** The Standard Webhooks key: the bytes after `whsec_`, or the secret's own bytes otherwise. */
export function standardWebhooksKey(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret, 'utf8');
}

export function standardWebhooksSignature(secret: string, id: string, timestamp: number, body: string | Buffer): string {
  const mac = createHmac('sha256', hmacKey(`standard:${secret}`, () => standardWebhooksKey(secret))).update(`${id}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
}

/** Constant-time comparison of two strings of possibly different lengths. */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
