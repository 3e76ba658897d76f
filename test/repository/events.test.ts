/**
 * Repository tier: the events outbox (api/db/events.ts) on a real database. Every writer in the
 * application goes through one insert, on its own (`recordEvents`) or as one CTE of a larger
 * statement (a payment's); its rows are the writer's transaction's and nothing else's.
 */
import t from 'tap';
import { rows } from '../../api/db/connection.ts';
import { eventsInsert, recordEvents, type EventTenant } from '../../api/db/events.ts';
import { PROCESSING_STATUS_TRIGGER } from '../../api/families/accounts/triggers.ts';
import { TRANSACTION_TRIGGERS } from '../../api/families/transactions/triggers.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: EventTenant = { orgId: 'org_acme', environment: 'test' };

interface StoredEvent {
  id: string;
  org_id: string;
  environment: string;
  trigger: string;
  object_type: string;
  object_id: string;
  value: Record<string, unknown>;
  seq: string;
}

const eventsOf = (tx: Parameters<typeof rows>[0], ids: string[]) =>
  rows<StoredEvent>(tx, 'select id, org_id, environment, trigger, object_type, object_id, value, seq::text from events where id = any(?::text[]) order by seq', [ids]);

t.test('recordEvents writes every draft in order, with ids of the one format, under the tenant', async (t) => {
  await withRollback(db, async (tx) => {
    const ids = await recordEvents(tx, acme, [
      { trigger: TRANSACTION_TRIGGERS.payment, objectType: 'transaction', objectId: 'txn_1', value: { amount: 10.5 } },
      { trigger: TRANSACTION_TRIGGERS.processed, objectType: 'transaction', objectId: 'txn_1', value: { amount: 10.5 } },
    ]);
    t.equal(ids.length, 2);
    for (const id of ids) t.match(id, /^evt_[0-9A-Za-z]{24}$/);
    const stored = await eventsOf(tx, ids);
    t.same(stored.map((e) => e.id), ids, 'stored in the order given (seq rises)');
    t.match(stored, [
      { org_id: 'org_acme', environment: 'test', trigger: 'payment', object_type: 'transaction', object_id: 'txn_1', value: { amount: 10.5 } },
      { trigger: 'processed' },
    ]);
  });
});

t.test('no drafts, no statement and no ids', async (t) => {
  await withRollback(db, async (tx) => {
    const [{ n: before }] = await rows<{ n: number }>(tx, 'select count(*)::int as n from events');
    t.same(await recordEvents(tx, acme, []), []);
    const [{ n: after }] = await rows<{ n: number }>(tx, 'select count(*)::int as n from events');
    t.equal(after, before);
  });
});

t.test('the one insert as a CTE of a larger statement writes the same rows', async (t) => {
  await withRollback(db, async (tx) => {
    const insert = eventsInsert(acme, [{ trigger: PROCESSING_STATUS_TRIGGER, objectType: 'processing_account', objectId: 'acct_1', value: { status: 'active' } }]);
    const [answer] = await rows<{ answered: number }>(tx, `with written as (${insert.sql}) select 1 as answered`, insert.bindings);
    t.equal(answer.answered, 1);
    t.match(await eventsOf(tx, insert.ids), [{ id: insert.ids[0], trigger: 'processing_status', object_id: 'acct_1', value: { status: 'active' } }]);
  });
});

t.test('events roll back with the transaction that wrote them', async (t) => {
  const ids = await withRollback(db, (tx) =>
    recordEvents(tx, acme, [{ trigger: TRANSACTION_TRIGGERS.refund, objectType: 'transaction', objectId: 'txn_2', value: {} }]));
  t.same(await eventsOf(db, ids), [], 'nothing of the rolled-back transaction is in the outbox');
});
