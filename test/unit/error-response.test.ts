/** Unit tier: `errorResponse`, the one mapping from an error to the status, headers and body a client sees. */
import t from 'tap';
import { errorResponse, invalidAttributes, notFound, payloadTooLarge, serviceUnavailable, tooManyRequests, transactionDeclined } from '../../api/errors.ts';

const INTERNAL = { status: 500, headers: {}, body: { object: 'error', error_type: 'InternalServerError', error_description: 'Internal server error' } };

t.test('an ApiError answers with its own status, type and description', async (t) => {
  t.same(errorResponse(notFound('No customer cus_1')), {
    status: 404, headers: {}, body: { object: 'error', error_type: 'NotFound', error_description: 'No customer cus_1' },
  });
});

t.test('field problems answer with their details, and a body without details has no details key', async (t) => {
  t.same(errorResponse(invalidAttributes({ email: 'Required', address: { city: 'Invalid' } })).body, {
    object: 'error', error_type: 'InvalidAttributes', error_description: 'email, address[city]',
    details: { email: 'Required', address: { city: 'Invalid' } },
  });
  t.notOk('details' in errorResponse(notFound()).body);
});

t.test('a decline answers 400 with the stored transaction as its details', async (t) => {
  const transaction = { id: 'txn_1', status: 'declined', status_code: 'card_expired' };
  t.same(errorResponse(transactionDeclined(transaction)), {
    status: 400, headers: {},
    body: { object: 'error', error_type: 'TransactionDeclined', error_description: 'Transaction declined: card_expired', details: transaction },
  });
});

t.test('an error\'s headers go out with it (Retry-After on 429, Connection: close on 413)', async (t) => {
  t.same(errorResponse(tooManyRequests(3)).headers, { 'Retry-After': '3' });
  t.same(errorResponse(payloadTooLarge()).headers, { Connection: 'close' });
});

t.test('a deliberate 503 keeps its reason and says when to come back', async (t) => {
  t.same(errorResponse(serviceUnavailable('Reporting is unavailable: retry shortly')), {
    status: 503, headers: { 'Retry-After': '1' }, body: { object: 'error', error_type: 'ServiceUnavailable', error_description: 'Reporting is unavailable: retry shortly' },
  });
});

t.test('an unexpected error is a bare 500 that does not show its message', async (t) => {
  t.same(errorResponse(new Error('password authentication failed for user "settle"')), INTERNAL);
  t.same(errorResponse('a thrown string'), INTERNAL);
  t.same(errorResponse(null), INTERNAL);
  t.same(errorResponse(Object.assign(new Error('boom'), { status: 500 })), INTERNAL, 'a foreign 5xx is masked too');
});

t.test('Koa\'s 4xx errors map onto our types, 405 and 415 as BadRequest', async (t) => {
  const koaError = (status: number, message: string) => Object.assign(new Error(message), { status });
  t.same(errorResponse(koaError(404, 'Not Found')), { status: 404, headers: {}, body: { object: 'error', error_type: 'NotFound', error_description: 'Not Found' } });
  t.match(errorResponse(koaError(405, 'Method Not Allowed')), { status: 400, body: { error_type: 'BadRequest' } });
  t.match(errorResponse(koaError(415, 'Unsupported Media Type')), { status: 415, body: { error_type: 'BadRequest' } });
  t.match(errorResponse(koaError(401, '')), { status: 401, body: { error_type: 'Unauthorized', error_description: 'Bad request' } });
});

t.test('a database that cannot be reached, or only reads, is a 503 with Retry-After, never a 500', async (t) => {
  const failures = [
    Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    Object.assign(new Error('terminating connection'), { code: '57P01' }),
    Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
    Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' }),
    Object.assign(new Error('pool'), { name: 'KnexTimeoutError' }),
    new Error('Connection terminated unexpectedly'),
    new Error('Client has encountered a connection error and is not queryable'),
  ];
  for (const error of failures) {
    t.same(errorResponse(error), {
      status: 503, headers: { 'Retry-After': '1' }, body: { object: 'error', error_type: 'ServiceUnavailable', error_description: 'The database is unavailable; retry shortly' },
    }, error.message);
  }
});

t.test('a deadlock or serialization failure is a 409 the client may retry', async (t) => {
  for (const code of ['40P01', '40001']) {
    t.match(errorResponse(Object.assign(new Error('deadlock detected'), { code })), { status: 409, body: { error_type: 'Conflict', error_description: 'The request conflicted with a concurrent change; retry it' } }, code);
  }
});

t.test('a value out of range for its column type is a 400', async (t) => {
  t.same(errorResponse(Object.assign(new Error('date/time field value out of range: "99999-01-01"'), { code: '22008' })), {
    status: 400, headers: {}, body: { object: 'error', error_type: 'BadRequest', error_description: 'A value is out of range', details: { value: 'Out of range' } },
  });
});

