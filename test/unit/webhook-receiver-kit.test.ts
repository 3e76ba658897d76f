import t from 'tap';
import { createWebhookReceiver, verifyServiceSignature, verifyStandardWebhook } from '../../api/webhooks/receiver.ts';

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

t.test('during a rotation the kit takes either secret, and drops an event older than one applied for the same object', async (t) => {
  const { createHmac } = await import('node:crypto');
  const { standardWebhooksSignature } = await import('../../api/webhooks/signature.ts');
  const older = SECRET;
  const newer = 'whsec_QkFOQU5BUy1hcmUtYmVycmllcy0xMjM0NTY3';
  const receive = createWebhookReceiver({ secret: [newer, older] });
  const now = Math.floor(Date.now() / 1000);
  const delivery = (id: string, sequence: number, signWith: string[]) => {
    const body = JSON.stringify({ object: 'webhook_trigger', event_id: id, trigger: 'payment_link:status', triggered_on: { id: 'pay_1', object: 'payment_link', value: 'inactive' }, sequence });
    const headers = {
      'x-service-signature': createHmac('sha256', signWith[0]).update(body).digest('hex'),
      'x-service-event-id': id, 'x-service-sequence': String(sequence),
      'webhook-id': id, 'webhook-timestamp': String(now),
      'webhook-signature': signWith.map((s) => standardWebhooksSignature(s, id, now, body)).join(' '),
    };
    return receive(body, headers);
  };
  const first = delivery('evt_a', 10, [newer, older]);
  t.same([first.status, first.duplicate, first.stale], [200, false, false], 'signed with both');
  const onlyOlder = createWebhookReceiver({ secret: older });
  const body = '{"event_id":"evt_b","triggered_on":{"id":"pay_1"},"sequence":1}';
  const both = [newer, older].map((s) => standardWebhooksSignature(s, 'evt_b', now, body)).join(' ');
  t.equal(onlyOlder(body, { 'x-service-signature': createHmac('sha256', newer).update(body).digest('hex'), 'webhook-id': 'evt_b', 'webhook-timestamp': String(now), 'webhook-signature': both }).status, 200,
    'a receiver that has only the old secret still verifies the Standard Webhooks signature');
  t.same([delivery('evt_c', 12, [newer]).stale, delivery('evt_d', 11, [newer]).stale], [false, true], 'sequence 11 after 12 of the same object is stale');
  t.equal(delivery('evt_e', 13, ['whsec_' + Buffer.from('someone else entirely!!').toString('base64')]).status, 401, 'neither secret: refused');
});
