/**
 * One event writer: every row of `events` comes from api/db/events.ts, called by the service. No
 * database function inserts into it and no other source file does; a transaction's operations
 * (the funding run's included) are written with their events by the operations' one writer, with
 * ids of the one format, typed triggers and money in API units.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { rows } from '../../api/db/connection.ts';
import type { EventTenant } from '../../api/db/events.ts';
import { fundingOperation, statusOperation } from '../../api/families/transaction_operations/operations.ts';
import { recordOperations } from '../../api/families/transaction_operations/repository.ts';
import { TRANSACTION_OPERATION_CLEAR_TRIGGER, TRANSACTION_OPERATION_TRIGGER } from '../../api/families/transaction_operations/triggers.ts';
import { repositoryDatabase, withRollback } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const acme: EventTenant = { orgId: 'org_acme', environment: 'test' };
const ID = (prefix: string) => new RegExp(`^${prefix}_[0-9A-Za-z]{24}$`);
const INSERT_INTO_EVENTS = /insert\s+into\s+("?\w+"?\.)?"?events"?[\s(]/i;

t.test('no database function inserts into events', async (t) => {
  const writers = await rows<{ name: string }>(db,
    `select n.nspname || '.' || p.proname as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname not in ('pg_catalog', 'information_schema') and p.prosrc ~* ?`,
    [INSERT_INTO_EVENTS.source]);
  t.same(writers.map((w) => w.name), []);
});

t.test('no source file but api/db/events.ts inserts into events', async (t) => {
  const root = path.resolve(import.meta.dirname, '../..');
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(relative);
      else if (relative.endsWith('.ts') && INSERT_INTO_EVENTS.test(fs.readFileSync(path.join(root, relative), 'utf8'))) found.push(relative);
    }
  };
  for (const dir of ['api', 'workers', 'reporting', 'bin']) walk(dir);
  t.same(found, ['api/db/events.ts']);
});

t.test('a status step and the funding steps are operation rows of the one id format, each with its typed events in API units', async (t) => {
  await withRollback(db, async (tx) => {
    const payment = { id: 'txn_x', type: 'payment', created_at: new Date(), modified_at: new Date(), data: { amount: 1250, status: 'declined' } };
    const declined = statusOperation(payment, null)!;
    const cleared = fundingOperation('clear', 'txn_y', 990);
    const funded = fundingOperation('fund', 'txn_y', 990, 'txn_deposit');
    await recordOperations(tx, acme, [declined, cleared, funded]);
    const stored = await rows<{ id: string; type: string; data: Record<string, unknown> }>(tx, 'select id, type, data from transaction_operations order by data->>\'transaction_id\', id');
    t.equal(stored.length, 3);
    for (const row of stored) t.match(row.id, ID('op'));
    t.same(stored.find((r) => r.id === declined.id)?.data, { transaction_id: 'txn_x', amount: 1250, status: 'failed' });
    t.same(stored.find((r) => r.id === funded.id)?.data, { transaction_id: 'txn_y', amount: 990, status: 'complete', deposit_id: 'txn_deposit' });
    const events = await rows<{ id: string; trigger: string; object_id: string; value: Record<string, unknown> }>(tx, 'select id, trigger, object_id, value from events order by seq');
    for (const event of events) t.match(event.id, ID('evt'));
    t.same(events.map((e) => [e.trigger, e.object_id, e.value.id]), [
      [TRANSACTION_OPERATION_TRIGGER, 'txn_x', declined.id],
      [TRANSACTION_OPERATION_TRIGGER, 'txn_y', cleared.id],
      [TRANSACTION_OPERATION_CLEAR_TRIGGER, 'txn_y', cleared.id],
      [TRANSACTION_OPERATION_TRIGGER, 'txn_y', funded.id],
    ]);
    t.same(events[0].value, { object: 'transaction_operation', id: declined.id, type: 'decline', status: 'failed', amount: 12.5 });
  });
});

t.test('a change that moves no status is no operation', async (t) => {
  const row = { id: 'txn_z', type: 'payment', created_at: new Date(), modified_at: new Date(), data: { amount: 100, status: 'processed' } };
  t.equal(statusOperation(row, row), null);
  t.equal(statusOperation({ ...row, data: { amount: 100, status: 'processing' } }, null), null);
  t.equal(statusOperation({ ...row, data: { amount: 100, status: 'processed' } }, { ...row, data: { amount: 100, status: 'authorized' } })?.type, 'capture');
});
