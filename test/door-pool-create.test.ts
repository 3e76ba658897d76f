/**
 * Creates planned on the pool (api/engine/operations.ts: rulesOnPool) for a family whose create
 * fires events: a plain processing account's create (its `processing_status`) is written by one
 * statement that is the first of its transaction to write (`alone`, test/helpers/firstWrites.ts),
 * with its audit event and its status event, which commit with the row: the same statement (the
 * row's and the event's transaction and command id) or not at all, once however the create is answered.
 */
import t from 'tap';
import { startTestApi } from './helpers/api.ts';
import { auditRows } from '../api/db/auditStatement.ts';
import { groupCommit } from '../api/db/groupWriter.ts';
import { BY_STATEMENT, BY_TRIGGER, noteAuditWriters } from './helpers/auditWriters.ts';
import { noteFirstWrites, writesAlone } from './helpers/firstWrites.ts';
import { refuseWrite } from './helpers/refuseWrite.ts';

const api = await startTestApi(t);
await noteAuditWriters(api.db);
await noteFirstWrites(api.db, ['accounts'], ['insert']);

async function eventsOf(objectId: string): Promise<Array<{ trigger: string; value: unknown; written: string }>> {
  return (await api.db.raw('select trigger, value, xmin::text || \'/\' || cmin::text as written from events where object_id = ? order by seq', [objectId])).rows;
}

/** The transaction and command that wrote a row's version as stored. */
async function writtenBy(id: string): Promise<string> {
  return (await api.db.raw(`select xmin::text || '/' || cmin::text as written from accounts where id = ?`, [id])).rows[0].written;
}

async function auditDepths(objectId: string): Promise<number[]> {
  return (await api.db.raw(`select w.depth from audit_events a join test_audit_writers w on w.event_id = a.id
                             where a.data->>'object_id' = ? and a.data->>'action' = 'create'`, [objectId])).rows.map((r: { depth: number }) => r.depth);
}

async function statusEventCount(): Promise<number> {
  return Number((await api.db.raw(`select count(*) from events where trigger = 'processing_status'`)).rows[0].count);
}

t.test('a processing account\'s create is written alone, its status event once by the same statement', async (t) => {
  await writesAlone(api.db, 'accounts', 'insert');
  const created = await api.request('POST', '/processing_accounts', { json: { name: 'Pooled', funding_delay: 3 } });
  t.equal(created.status, 200);
  t.match(created.body, { object: 'processing_account', name: 'Pooled', status: 'pending', funding_delay: 3 });
  const id = created.body.id;
  t.same(await writesAlone(api.db, 'accounts', 'insert'), [true], 'one statement, its transaction\'s first write');
  const events = await eventsOf(id);
  t.same(events.map((e) => [e.trigger, e.value]), [['processing_status', 'pending']], 'one status event');
  t.equal(events[0].written, await writtenBy(id), 'written by the statement that wrote the row');
  t.same(await auditDepths(id), [BY_STATEMENT], 'audited once, by the statement');
});

t.test('processing accounts created at once each have their one event, written by their row\'s statement', async (t) => {
  await writesAlone(api.db, 'accounts', 'insert');
  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => api.request('POST', '/processing_accounts', { json: { name: `Together ${i}` } })));
  t.same(answers.map((a) => a.status), answers.map(() => 200));
  t.ok((await writesAlone(api.db, 'accounts', 'insert')).every((alone) => alone), 'each statement its transaction\'s first write');
  for (const answer of answers) {
    const events = await eventsOf(answer.body.id);
    t.same(events.map((e) => e.value), ['pending'], `${answer.body.name}: one event`);
    t.equal(events[0].written, await writtenBy(answer.body.id), `${answer.body.name}: by its row's statement`);
  }
});

t.test('a create whose statement fails writes neither the row nor its event, and those grouped with it are written once', async (t) => {
  await refuseWrite(api.db, t, 'accounts', 'insert', 'name', 'Refused');
  const before = await statusEventCount();
  const refused = await api.request('POST', '/processing_accounts', { json: { name: 'Refused' } });
  t.ok(refused.status >= 400, `refused (${refused.status})`);
  t.same((await api.db.raw(`select id from accounts where data->>'name' = 'Refused'`)).rows, [], 'no row');
  t.equal(await statusEventCount(), before, 'no event');

  // Arriving together, the refused one may share a group's statement: the others are written again, each event once.
  const answers = await Promise.all(['Refused', 'Beside 1', 'Beside 2', 'Beside 3', 'Beside 4'].map((name) => api.request('POST', '/processing_accounts', { json: { name } })));
  t.ok(answers[0].status >= 400, 'the refused one is refused');
  t.same(answers.slice(1).map((a) => a.status), [200, 200, 200, 200], 'the others are created');
  for (const answer of answers.slice(1)) t.same((await eventsOf(answer.body.id)).map((e) => e.value), ['pending'], `${answer.body.name}: one event`);
  t.equal(await statusEventCount(), before + 4, 'no event of the refused one');
});

t.test('a create answered with its stored answer (Idempotency-Key) or with fields writes its event once, with the row', async (t) => {
  const body = { name: 'Keyed' };
  const headers = { 'Idempotency-Key': 'door-pool-create-keyed' };
  const first = await api.request('POST', '/processing_accounts', { json: body, headers });
  const replay = await api.request('POST', '/processing_accounts', { json: body, headers });
  t.equal(first.status, 200);
  t.equal(replay.body.id, first.body.id, 'the replay answers the same account');
  const keyed = await eventsOf(first.body.id);
  t.same(keyed.map((e) => e.value), ['pending'], 'one event for the key');
  t.equal(keyed[0].written.split('/')[0], (await writtenBy(first.body.id)).split('/')[0], 'committed with the row');

  const fielded = await api.request('POST', '/processing_accounts?fields=id,name', { json: { name: 'Fielded' } });
  t.equal(fielded.status, 200);
  t.same(Object.keys(fielded.body).sort(), ['id', 'name']);
  const events = await eventsOf(fielded.body.id);
  t.same(events.map((e) => e.value), ['pending'], 'one event');
  t.equal(events[0].written.split('/')[0], (await writtenBy(fielded.body.id)).split('/')[0], 'committed with the row');
});

t.test('a processing account with an inline entity is still created in a transaction, its entity first', async (t) => {
  await writesAlone(api.db, 'accounts', 'insert');
  const created = await api.request('POST', '/processing_accounts', { json: { name: 'Backed', legal_entity: { legal_name: 'Backed LLC' } } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  t.same(await writesAlone(api.db, 'accounts', 'insert'), [false], 'the account after its entity, in one transaction');
  t.same((await eventsOf(created.body.id)).map((e) => e.value), ['pending'], 'one event');
});

t.test('without group commit, or with the audit left to the triggers, the create and its event commit in one transaction', async (t) => {
  const settings: Array<[string, () => void]> = [
    ['no group commit', () => { groupCommit.enabled = false; }],
    ['audit by trigger', () => { auditRows.inStatement = false; }],
  ];
  for (const [name, set] of settings) {
    set();
    try {
      const created = await api.request('POST', '/processing_accounts', { json: { name } });
      t.equal(created.status, 200, name);
      const events = await eventsOf(created.body.id);
      t.same(events.map((e) => e.value), ['pending'], `${name}: one event`);
      t.equal(events[0].written.split('/')[0], (await writtenBy(created.body.id)).split('/')[0], `${name}: committed with the row`);
      t.same(await auditDepths(created.body.id), [BY_TRIGGER], `${name}: audited by the trigger`);
    } finally {
      groupCommit.enabled = true;
      auditRows.inStatement = true;
    }
  }
});
