/**
 * Repository tier: a transaction's statements on a real database (api/db/connection.ts). A
 * transaction holds one connection, which runs one statement at a time; statements sent together
 * (a `Promise.all` in a family's rules) must wait their turn in Settle, not in pg, which warns
 * ("client.query() when the client is already executing a query") and whose next major refuses.
 */
import t from 'tap';
import { createDb, rows } from '../../api/db/connection.ts';
import { freshDatabase } from '../helpers/db.ts';

const db = createDb(await freshDatabase(t), 2);
t.teardown(() => db.destroy());

t.test('statements sent together in one transaction each answer, one after another, without a pg warning', async (t) => {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.message);
  process.on('warning', onWarning);
  t.teardown(() => void process.off('warning', onWarning));
  const answers = await db.transaction(async (tx) => {
    await rows(tx, 'create temporary table seen (n int) on commit drop');
    return Promise.all(Array.from({ length: 5 }, (_, n) => rows<{ n: number }>(tx, 'insert into seen values (?) returning (select count(*)::int from seen) as n', [n])));
  });
  t.same(answers.map((r) => r[0]!.n), [0, 1, 2, 3, 4], 'each statement answered, in the order sent');
  // A warning is emitted on the next tick after the query that caused it.
  await new Promise((resolve) => setImmediate(resolve));
  t.same(warnings.filter((w) => /already executing a query/.test(w)), []);
});
