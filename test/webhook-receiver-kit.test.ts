import t from 'tap';
import { createWebhookReceiver, verifyServiceSignature, verifyStandardWebhook } from '../api/webhooks/receiver.ts';

// Known-answer vectors, computed independently with Python's hmac module:
//   hmac.new(b'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', body, 'sha256').hexdigest()
//   base64(hmac.new(base64decode('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'), b'msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.' + body, 'sha256'))
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const BODY = '{"test": 2432232314}';
const SERVICE_SIGNATURE = '80ec8a89ce3cd22133a1066caecb4d04fea7467657c8514d717ec42c38a5c94c';
const STANDARD = { id: 'msg_p5jXN8AQM9LWM0D4loKWxJek', timestamp: 1614265330, signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=' };

t.test('X-Service-Signature: hex HMAC-SHA256 of the raw body', async (t) => {
  t.ok(verifyServiceSignature(SECRET, BODY, SERVICE_SIGNATURE));
  t.ok(verifyServiceSignature(SECRET, Buffer.from(BODY), SERVICE_SIGNATURE.toUpperCase()), 'case of the hex digest does not matter');
  t.notOk(verifyServiceSignature(SECRET, BODY + ' ', SERVICE_SIGNATURE), 'one byte more fails');
  t.notOk(verifyServiceSignature(SECRET, JSON.stringify(JSON.parse(BODY)), SERVICE_SIGNATURE), 're-serialised JSON fails: verify the raw bytes');
  t.notOk(verifyServiceSignature('whsec_other', BODY, SERVICE_SIGNATURE));
  t.notOk(verifyServiceSignature(SECRET, BODY, undefined));
  t.notOk(verifyServiceSignature(SECRET, BODY, SERVICE_SIGNATURE.slice(0, 10)), 'a truncated signature fails');
});

t.test('Standard Webhooks: id.timestamp.body under the base64 key after whsec_, with replay tolerance', async (t) => {
  const headers = { 'webhook-id': STANDARD.id, 'webhook-timestamp': String(STANDARD.timestamp), 'webhook-signature': STANDARD.signature };
  t.ok(verifyStandardWebhook(SECRET, BODY, headers, STANDARD.timestamp));
  t.ok(verifyStandardWebhook(SECRET, BODY, { ...headers, 'webhook-signature': `v1,bogus ${STANDARD.signature}` }, STANDARD.timestamp), 'any of several signatures');
  t.notOk(verifyStandardWebhook(SECRET, BODY, headers, STANDARD.timestamp + 301), 'too old: replay refused');
  t.notOk(verifyStandardWebhook(SECRET, BODY, { ...headers, 'webhook-id': 'msg_other' }, STANDARD.timestamp));
});

t.test('the receiver answers 200 on a match, 401 on a mismatch, and dedups on the event id', async (t) => {
  const receive = createWebhookReceiver({ secret: SECRET });
  const body = '{"object":"webhook_trigger","event_id":"evt_1","trigger":"payment","triggered_on":{"id":"txn_1","object":"transaction"}}';
  const { createHmac } = await import('node:crypto');
  const signature = createHmac('sha256', SECRET).update(body).digest('hex');
  const first = receive(body, { 'x-service-signature': signature, 'x-service-event-id': 'evt_1' });
  t.same([first.status, first.duplicate, first.event?.trigger], [200, false, 'payment']);
  const again = receive(body, { 'x-service-signature': signature, 'x-service-event-id': 'evt_1' });
  t.same([again.status, again.duplicate], [200, true], 'a retry of the same event is a duplicate');
  const forged = receive(body, { 'x-service-signature': '00'.repeat(32), 'x-service-event-id': 'evt_2' });
  t.same([forged.status, forged.event], [401, undefined]);
});
