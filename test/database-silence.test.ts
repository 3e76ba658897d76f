/**
 * A database machine that vanishes sends no reset (CONTRACT §26): connections to it notice within
 * SETTLE_DATABASE_SILENCE and fail as connection errors, and the process answers again once the
 * host speaks or another host of the URL takes writes. The silent host is a loopback proxy that
 * keeps its sockets open and forwards nothing.
 */
import t from 'tap';
import { createDb, rows } from '../api/db/connection.ts';
import { isDatabaseUnavailable } from '../api/errors.ts';
import { setDatabaseSilence } from '../api/db/silence.ts';
import { startTestApi } from './helpers/api.ts';
import { freshDatabase } from './helpers/db.ts';
import { startTcpProxy } from './helpers/tcpProxy.ts';
import { eventually } from './helpers/wait.ts';

const customer = (name: string) => ({ json: { name, email: `${name.toLowerCase()}@example.com` } });

t.test('a request whose database host falls silent answers 503 with Retry-After, and requests are served again once it speaks', { timeout: 60_000 }, async (t) => {
  const database = await freshDatabase(t);
  const proxy = await startTcpProxy(t, Number(new URL(database).port || 5432));
  const api = await startTestApi(t, { SETTLE_DATABASE_SILENCE: '2s' }, {}, proxy.urlThrough(database));
  t.equal((await api.request('POST', '/customers', customer('Before'))).status, 200);
  proxy.silence();
  const unanswered = await api.request('POST', '/customers', customer('Silent'));
  t.equal(unanswered.status, 503, JSON.stringify(unanswered.body));
  t.match(unanswered.headers.get('Retry-After'), /^\d+$/);
  proxy.speak();
  const served = await eventually(() => api.request('POST', '/customers', customer('After')), (r) => r.status === 200, 20_000, 100);
  t.equal(served.status, 200, 'served without a restart');
});

t.test('a pool query on a silent primary fails as a connection error, and the pool moves to the second host of the URL', { timeout: 60_000 }, async (t) => {
  setDatabaseSilence(2000);
  t.teardown(() => setDatabaseSilence(10_000));
  const database = await freshDatabase(t);
  const port = Number(new URL(database).port || 5432);
  const [first, second] = [await startTcpProxy(t, port), await startTcpProxy(t, port)];
  const db = createDb(database.replace(/@[^/]+\//, `@127.0.0.1:${first.port},127.0.0.1:${second.port}/`), 2);
  t.teardown(() => db.destroy());
  t.same(await rows(db, 'select 1 as one'), [{ one: 1 }]);
  first.silence();
  const failed = await db.raw('select 1 as one').then(() => null, (error: unknown) => error);
  t.ok(isDatabaseUnavailable(failed), `a connection-level error: ${String(failed)}`);
  const answered = await eventually(() => rows(db, 'select 1 as one').catch(() => []), (r) => r.length === 1, 30_000, 100);
  t.same(answered, [{ one: 1 }], 'answered by the second host while the first stays silent');
});

t.test('a query that runs longer than the silence bound on a host that answers is not cut', { timeout: 60_000 }, async (t) => {
  setDatabaseSilence(1000);
  t.teardown(() => setDatabaseSilence(10_000));
  const database = await freshDatabase(t);
  const db = createDb(database, 1);
  t.teardown(() => db.destroy());
  t.same(await rows(db, 'select pg_sleep(4)::text as slept'), [{ slept: '' }]);
});
