/**
 * An idempotency claim is a lease its request renews while it runs (CONTRACT §26): a request that
 * can no longer end its claim — its web process killed, or its database gone from under it, as
 * when the primary dies — does not block the retry of the same request for more than seconds, and
 * the retry makes the one effect.
 */
import pg from 'pg';
import t, { type Test } from 'tap';
import { startTestApi, type TestApi } from './helpers/api.ts';
import { freshDatabase } from './helpers/db.ts';
import { spawnWeb } from './helpers/processes.ts';
import { startTcpProxy } from './helpers/tcpProxy.ts';
import { eventually } from './helpers/wait.ts';

/** Far inside the minute an unleased claim used to block for, far beyond the lease. */
const RETRY_WITHIN_MS = 20_000;

async function client(t: Test, url: string): Promise<pg.Client> {
  const connection = new pg.Client({ connectionString: url, application_name: 'operator' });
  await connection.connect();
  t.teardown(() => connection.end());
  return connection;
}

/** Makes writes to accounts wait, so a request is caught after its claim and before its effect. */
async function holdWrites(t: Test, url: string): Promise<{ caught: () => Promise<void>; release: () => Promise<void> }> {
  const holder = await client(t, url);
  const watcher = await client(t, url);
  await holder.query('begin');
  await holder.query('lock table accounts in exclusive mode');
  const waiting = async () => (await watcher.query(
    `select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'settle' and wait_event_type = 'Lock'`,
  )).rows[0].n as number;
  return {
    caught: async () => void await eventually(waiting, (n) => n > 0, 10_000),
    release: async () => void await holder.query('rollback'),
  };
}

/**
 * The same request again, by the same credential on a web that can reach the database, until it
 * is answered with other than 409: it succeeds, after being blocked while the claim was fresh, and
 * one customer exists.
 */
async function retryMakesOneEffect(t: Test, api: TestApi, key: string, body: { name: string }, idempotencyKey: string): Promise<void> {
  const statuses: number[] = [];
  const answer = await eventually(async () => {
    const response = await api.request('POST', '/customers', { key, json: body, headers: { 'Idempotency-Key': idempotencyKey } });
    statuses.push(response.status);
    return response;
  }, (response) => response.status !== 409, RETRY_WITHIN_MS, 250);
  t.equal(answer.status, 200, `the retry succeeds (answers: ${statuses.join(',')})`);
  t.equal(statuses[0], 409, 'it was blocked while the claim was fresh');
  t.equal(await customersNamed(api, body.name), 1, 'one customer');
}

async function customersNamed(api: TestApi, name: string): Promise<number> {
  return (await api.db.raw(`select count(*)::int as n from accounts where data->>'name' = ?`, [name])).rows[0].n;
}

t.test('the retry of a request whose database went away under it succeeds within seconds, once', async (t) => {
  const database = await freshDatabase(t);
  const proxy = await startTcpProxy(t, Number(new URL(database).port || 5432));
  const cutOff = await startTestApi(t, {}, {}, proxy.urlThrough(database));
  const reachable = await startTestApi(t, {}, {}, database);
  const body = { name: 'Lease Lee', email: 'lee@example.com' };
  const held = await holdWrites(t, database);
  const first = cutOff.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': 'lease-db' } });
  await held.caught();
  await proxy.close();
  t.equal((await first).status, 503, 'the request answers 503: its database is gone, and so is its way to release the key');
  await held.release();
  await retryMakesOneEffect(t, reachable, cutOff.key, body, 'lease-db');
});

t.test('the retry of a request whose web process was killed under it succeeds within seconds, once', async (t) => {
  const reachable = await startTestApi(t);
  const killed = await spawnWeb(t, { DATABASE_URL: reachable.databaseUrl });
  const body = { name: 'Killed Kim', email: 'kim@example.com' };
  const held = await holdWrites(t, reachable.databaseUrl);
  const first = fetch(`${killed.url}/customers`, {
    method: 'POST',
    headers: { Authorization: `Basic ${Buffer.from(`${reachable.key}:`).toString('base64')}`, 'Content-Type': 'application/json', 'Idempotency-Key': 'lease-kill' },
    body: JSON.stringify(body),
  }).then((response) => response.status, () => 'no answer');
  await held.caught();
  killed.child.kill('SIGKILL');
  await killed.exited;
  t.equal(await first, 'no answer', 'the process died with the request');
  await held.release();
  await retryMakesOneEffect(t, reachable, reachable.key, body, 'lease-kill');
});

t.test('a request still running past its first lease keeps its claim: a duplicate is 409 and one effect is made', async (t) => {
  const api = await startTestApi(t);
  const body = { name: 'Slow Sol', email: 'sol@example.com' };
  const held = await holdWrites(t, api.databaseUrl);
  const first = api.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': 'lease-slow' } });
  await held.caught();
  const pastFirstLease = await eventually(
    async () => (await api.db.raw(`select now() > created_at + interval '7 s' as past from idempotency_keys where key like '%:lease-slow'`)).rows[0]?.past,
    Boolean, 20_000, 250,
  );
  t.equal(pastFirstLease, true, 'the claim is older than its first lease');
  const duplicate = await api.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': 'lease-slow' } });
  t.equal(duplicate.status, 409, 'the running request still holds the key');
  await held.release();
  t.equal((await first).status, 200);
  t.equal(await customersNamed(api, 'Slow Sol'), 1, 'one customer');
});

t.test('a request whose process stalls past its lease while a retry takes the key over makes no second effect', async (t) => {
  const reachable = await startTestApi(t);
  const stalled = await spawnWeb(t, { DATABASE_URL: reachable.databaseUrl });
  const body = { name: 'Stalled Stan', email: 'stan@example.com' };
  const held = await holdWrites(t, reachable.databaseUrl);
  const first = fetch(`${stalled.url}/customers`, {
    method: 'POST',
    headers: { Authorization: `Basic ${Buffer.from(`${reachable.key}:`).toString('base64')}`, 'Content-Type': 'application/json', 'Idempotency-Key': 'lease-stall' },
    body: JSON.stringify(body),
  }).then((response) => response.status, () => 'no answer');
  await held.caught();
  // SIGSTOP holds the whole process, its event loop and its lease renewals with it, as a long stall would.
  stalled.child.kill('SIGSTOP');
  t.teardown(() => void stalled.child.kill('SIGCONT'));
  const lapsed = await eventually(
    async () => (await reachable.db.raw(`select lease_until < now() as lapsed from idempotency_keys where key like '%:lease-stall'`)).rows[0]?.lapsed,
    Boolean, 20_000, 250,
  );
  t.equal(lapsed, true, "the stalled request's lease ran out");
  // Its write goes on in the database, uncommitted: the stalled process has yet to finish its transaction.
  await held.release();
  const retried = await reachable.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': 'lease-stall' } });
  t.equal(retried.status, 200, 'the retry takes the key over and succeeds');
  stalled.child.kill('SIGCONT');
  t.equal(await first, 409, 'the stalled request, resumed, answers that a retry took its key over');
  t.equal(await customersNamed(reachable, body.name), 1, 'one customer: the stalled write was not committed beside the retry');
  const replayed = await reachable.request('POST', '/customers', { json: body, headers: { 'Idempotency-Key': 'lease-stall' } });
  t.same([replayed.status, replayed.body.id], [200, retried.body.id], "the key still answers the retry's success");
});
