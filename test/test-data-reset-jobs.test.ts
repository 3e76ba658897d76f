/**
 * A reset of a test environment (`DELETE /test_data`) and the worker's jobs about it never
 * overlap, as its requests never do: a job under way when the reset starts finishes first (and the
 * reset deletes what it did), and one that comes due meanwhile waits for the reset to commit. Here
 * with a real worker and a real SMTP server on loopback that holds a link e-mail in hand-over, so
 * the job is caught half-way: claimed, not yet marked sent.
 */
import t, { type Test } from 'tap';
import { SMTPServer } from 'smtp-server';
import { startTestApi, startTestWorker } from './helpers/api.ts';
import { eventually } from './helpers/wait.ts';

process.env.SETTLE_PUBLIC_URL = 'https://pay.example.test';

/** An SMTP server that takes each message's data and answers only when the test lets it go. */
async function startHoldingSmtp(t: Test) {
  const state = { url: '', held: [] as Array<() => void>, received: [] as string[] };
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      stream.resume();
      stream.on('end', () => {
        state.received.push(session.envelope.rcptTo.map((r) => r.address).join(','));
        state.held.push(() => callback());
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    for (const release of state.held) release();
    server.close(() => resolve());
  }));
  state.url = `smtp://127.0.0.1:${(server.server.address() as { port: number }).port}`;
  return state;
}

t.test('a reset waits for a job of its environment that is under way, then deletes what the job did', async (t) => {
  const api = await startTestApi(t);
  const smtp = await startHoldingSmtp(t);
  await startTestWorker(t, api.databaseUrl, { SMTP_URL: smtp.url, WORKER_POLL_INTERVAL: '50' });
  const activation = await api.request('POST', '/payment_activations', {
    json: { intent: { entity_name: 'Boba' }, send_to: [{ name: 'Boba', email: 'boba@example.test' }] },
  });
  t.equal(activation.status, 200, JSON.stringify(activation.body));
  t.equal(await eventually(async () => smtp.held.length, (n) => n === 1, 30_000, 20), 1, 'the e-mail job is handing its message over');

  let resetAnswered = false;
  const reset = api.request('DELETE', '/test_data').finally(() => (resetAnswered = true));
  const waits = await eventually(async () => {
    const found = await api.db.raw(
      `select wait_event from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query like '%pg_advisory_xact_lock%'`);
    return found.rows.map((r: { wait_event: string }) => r.wait_event) as string[];
  }, (events) => events.includes('advisory'), 15_000, 20);
  t.ok(waits.includes('advisory'), 'the reset waits on the tenant lock the job holds');
  t.notOk(resetAnswered, 'the reset has not answered while the job runs');

  smtp.held.shift()!();
  const answered = await reset;
  t.equal(answered.status, 200, JSON.stringify(answered.body));
  t.match(answered.body.deleted, { payment_activations: 1, link_emails: 1 }, 'the reset deleted the activation and its e-mail');
  t.same(smtp.received, ['boba@example.test'], 'the message was handed over once');
  const left = await api.db('link_emails').where({ environment: 'test' }).count({ n: '*' });
  t.equal(Number(left[0].n), 0, 'no e-mail of the environment is left, sent or not');
  const jobs = await api.db.raw(`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'send_link_email'`);
  t.equal(jobs.rows[0].n, 0, 'no e-mail job is left');
});

t.test('a job that comes due while a reset holds the environment runs after it, on the empty environment', async (t) => {
  const api = await startTestApi(t);
  const smtp = await startHoldingSmtp(t);
  // The e-mail's job is queued; then the test holds the environment's reset lock as a running reset
  // does (requests would wait for it too), and a worker starts and takes the job.
  const activation = await api.request('POST', '/payment_activations', {
    json: { intent: { entity_name: 'Boba' }, send_to: [{ name: 'Boba', email: 'boba@example.test' }] },
  });
  t.equal(activation.status, 200, JSON.stringify(activation.body));
  const [{ id: orgId }] = await api.db('orgs').where({ name: 'acme' }).select('id');
  const holding = await api.db.transaction();
  await holding.raw(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`settle.tenant_reset:${orgId}/test`]);
  await startTestWorker(t, api.databaseUrl, { SMTP_URL: smtp.url, WORKER_POLL_INTERVAL: '50' });
  const emailJobs = async (where: string) =>
    (await api.db.raw(`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'send_link_email' ${where}`)).rows[0].n as number;
  t.equal(await eventually(() => emailJobs('and locked_at is not null'), (n) => n === 1, 15_000, 20), 1, 'the worker took the job');
  // The environment is emptied while the job waits (what the reset deletes, the test deletes here).
  await holding.raw(`delete from link_emails where org_id = ? and environment = 'test'`, [orgId]);
  await holding.commit();
  t.equal(await eventually(() => emailJobs(''), (n) => n === 0, 15_000, 20), 0, 'the job finished');
  t.same(smtp.received, [], 'it found its e-mail gone and sent nothing');
});
