/**
 * The database handle over pg (api/db/connection.ts): `?` placeholders, transactions with knex's
 * semantics (commit on resolve, rollback and the same error on reject, savepoints inside), and
 * named prepared statements that stay bounded and survive a schema change.
 */
import t from 'tap';
import { createDb, rows, type QueryEvent } from '../api/db/connection.ts';
import { positional } from '../api/db/placeholders.ts';
import { freshDatabase } from './helpers/db.ts';

const url = await freshDatabase(t);
const db = createDb(url, 1);
t.teardown(() => db.destroy());
await db.raw('create table notes (id int primary key, body text)');

t.test('a ? in a literal, a quoted name, a comment or a dollar-quoted body is text; \\? is a literal ?', async (t) => {
  t.same(positional(`select '?', "a?b", $$?$$, $x$ ? $x$, E'\\'?' -- ?\n from t where a = ? /* ? */ and b \\? ?`), {
    text: `select '?', "a?b", $$?$$, $x$ ? $x$, E'\\'?' -- ?\n from t where a = $1 /* ? */ and b ? $2`,
    count: 2,
  });
  const [row] = await rows(db, `select '?' as mark, '{"a": 1}'::jsonb \\? ? as has, ?::int + 1 as next`, ['a', 41]);
  t.same(row, { mark: '?', has: true, next: 42 });
});

t.test('a ? inside a nested block comment stays text, as PostgreSQL nests comments', async (t) => {
  t.same(positional('select 1 /* outer /* inner */ still ? comment */ where a = ?'), {
    text: 'select 1 /* outer /* inner */ still ? comment */ where a = $1',
    count: 1,
  });
});

t.test('bindings that do not match the placeholders are refused before anything runs', async (t) => {
  await t.rejects(rows(db, 'select ?::int', [1, 2]), /Expected 2 bindings, saw 1/);
  await t.rejects(rows(db, 'select ?::int', [undefined]), /Undefined binding/);
});

t.test('a transaction commits when its work resolves and returns what it returned', async (t) => {
  const result = await db.transaction(async (tx) => {
    await rows(tx, 'insert into notes values (?, ?)', [1, 'kept']);
    return 'done';
  });
  t.equal(result, 'done');
  t.same(await rows(db, 'select body from notes where id = ?', [1]), [{ body: 'kept' }]);
});

t.test('a transaction rolls back when its work rejects and rethrows the database error with its code', async (t) => {
  const failed = db.transaction(async (tx) => {
    await rows(tx, 'insert into notes values (?, ?)', [2, 'lost']);
    await rows(tx, 'insert into notes values (?, ?)', [1, 'duplicate']);
  });
  await t.rejects(failed, { code: '23505' });
  t.same(await rows(db, 'select id from notes where id = ?', [2]), [], 'nothing of it stayed');
});

t.test('a transaction inside one is a savepoint: its failure undoes only its own work', async (t) => {
  await db.transaction(async (tx) => {
    await rows(tx, 'insert into notes values (?, ?)', [3, 'outer']);
    await t.rejects(tx.transaction(async (inner) => {
      await rows(inner, 'insert into notes values (?, ?)', [4, 'inner']);
      throw new Error('inner failed');
    }), /inner failed/);
    await tx.transaction((inner) => rows(inner, 'insert into notes values (?, ?)', [5, 'inner kept']));
  });
  t.same(await rows(db, 'select id from notes where id in (3, 4, 5) order by id'), [{ id: 3 }, { id: 5 }]);
});

t.test('opening statements go with BEGIN, in order, each reading after the one before it: a row committed while the first waited for a lock is seen by the second', async (t) => {
  const other = createDb(url, 2);
  t.teardown(() => other.destroy());
  const holder = await other.transaction();
  await rows(holder, 'select pg_advisory_xact_lock(4242)');
  await rows(holder, 'insert into notes values (?, ?)', [70, 'committed while the opening waited']);
  let opened: Array<Record<string, unknown>[]> | undefined;
  const seen: string[] = [];
  const listen = (query: QueryEvent) => void seen.push(query.sql);
  db.on('query', listen);
  t.teardown(() => db.off('query', listen));
  const waiting = db.transaction(async (tx) => {
    opened = tx.opened;
    return rows(tx, 'select id from notes where id = ?', [70]);
  }, { opening: ['select pg_advisory_xact_lock(4242) as locked', 'select id from notes where id = 70'] });
  // The opening waits on the lock; the holder commits only then.
  const waited = async () => (await rows(other, `select 1 from pg_locks where locktype = 'advisory' and not granted`)).length > 0;
  while (!(await waited())) await new Promise((resolve) => setTimeout(resolve, 10));
  await holder.commit();
  t.same(await waiting, [{ id: 70 }]);
  t.same(opened, [[{ locked: '' }], [{ id: 70 }]], 'each opening statement\'s rows, the second read after the lock was won');
  t.same(seen.slice(0, 2), ['select pg_advisory_xact_lock(4242) as locked', 'select id from notes where id = 70'], 'the query event shows the opening statements');
});

t.test('an opened transaction ends with commit() or rollback(), and takes no query after', async (t) => {
  const open = await db.transaction(undefined, { isolationLevel: 'repeatable read' });
  t.same(await rows(open, 'show transaction_isolation'), [{ transaction_isolation: 'repeatable read' }]);
  await rows(open, 'insert into notes values (?, ?)', [6, 'rolled back']);
  await open.rollback();
  await t.rejects(rows(open, 'select 1'), /already complete/);
  t.same(await rows(db, 'select id from notes where id = ?', [6]), []);
});

t.test('a repeated text is prepared once per connection; dynamic texts cannot grow the prepared set without bound', async (t) => {
  for (let i = 0; i < 3; i += 1) await rows(db, 'select body from notes where id = ?', [1]);
  for (let i = 0; i < 400; i += 1) {
    for (let twice = 0; twice < 2; twice += 1) await rows(db, `select ${i} as n, body from notes where id = ?`, [1]);
  }
  const prepared = await rows<{ statement: string }>(db, 'select statement from pg_prepared_statements where from_sql = false');
  t.equal(prepared.filter((p) => p.statement === 'select body from notes where id = $1').length, 1, 'the repeated text is prepared');
  t.ok(prepared.length <= 300, `at most 300 prepared on the connection (${prepared.length})`);
});

t.test('a prepared select * keeps working after its table gains a column', async (t) => {
  for (let i = 0; i < 3; i += 1) await rows(db, 'select * from notes where id = ?', [1]);
  await db.raw('alter table notes add column tag text');
  t.same(await rows(db, 'select * from notes where id = ?', [1]), [{ id: 1, body: 'kept', tag: null }]);
});

t.test('the query event shows each statement as sent', async (t) => {
  const seen: string[] = [];
  const listener = (q: { sql: string }) => seen.push(q.sql);
  db.on('query', listener);
  await rows(db, 'select ?::int as n', [1]);
  db.off('query', listener);
  await rows(db, 'select ?::int as n', [2]);
  t.same(seen, ['select $1::int as n']);
});

t.test('a connection whose host refused a write (read only, 25006) is not handed out again', async (t) => {
  // The pool's one connection is made read-only for the rest of its life, as a demoted primary's are.
  await db.transaction(async (tx) => {
    await rows(tx, 'set session default_transaction_read_only = on');
  });
  await t.rejects(db.transaction((tx) => rows(tx, 'insert into notes (id, body) values (?, ?)', [7, 'refused'])), { code: '25006' });
  await db.transaction((tx) => rows(tx, 'insert into notes (id, body) values (?, ?)', [7, 'written']));
  t.same(await rows(db, 'select body from notes where id = ?', [7]), [{ body: 'written' }], 'the next transaction ran on a new connection');
});
