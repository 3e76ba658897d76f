/**
 * Unit tier: group commit. A lone write goes at once; writes that arrive while the writer's
 * statements are running go together as one; a group the database refuses for a row is written
 * again one by one, so only the write at fault fails; a group that fails otherwise (the database
 * unreachable) fails every write at once.
 */
import t from 'tap';
import { GroupWriter } from '../../api/db/groupWriter.ts';

/** A writeMany whose statements end when the test says, recording each group. */
function heldWriter(failOn?: number, code = '23505') {
  const groups: number[][] = [];
  const pending: Array<() => void> = [];
  const writeMany = (items: number[]) => new Promise<string[]>((resolve, reject) => {
    groups.push(items);
    pending.push(() => (failOn !== undefined && items.includes(failOn) ? reject(Object.assign(new Error(`refused ${failOn}`), { code })) : resolve(items.map((i) => `row ${i}`))));
  });
  const releaseAll = async () => {
    while (pending.length) {
      pending.shift()!();
      await new Promise((r) => setImmediate(r));
    }
  };
  return { groups, writeMany, releaseAll };
}

t.test('a lone write goes at once; writes arriving while one runs go together as the next statement', async (t) => {
  const held = heldWriter();
  const writer = new GroupWriter(held.writeMany, { maxGroup: 3, maxRunning: 1 });
  const first = writer.write(1);
  t.same(held.groups, [[1]], 'the first write did not wait');
  const rest = [2, 3, 4, 5].map((i) => writer.write(i));
  t.same(held.groups, [[1]], 'the others wait while it runs');
  await held.releaseAll();
  t.same(held.groups, [[1], [2, 3, 4], [5]], 'then go in groups of at most 3');
  t.same(await Promise.all([first, ...rest]), ['row 1', 'row 2', 'row 3', 'row 4', 'row 5'], 'each answered with its own row');
});

t.test('with two statements at once, the third write waits for one of them', async (t) => {
  const held = heldWriter();
  const writer = new GroupWriter(held.writeMany, { maxGroup: 10, maxRunning: 2 });
  const writes = [1, 2, 3, 4].map((i) => writer.write(i));
  t.same(held.groups, [[1], [2]]);
  await held.releaseAll();
  t.same(held.groups, [[1], [2], [3, 4]]);
  t.same(await Promise.all(writes), ['row 1', 'row 2', 'row 3', 'row 4']);
});

t.test('a failing group is written again one by one: only the write at fault fails', async (t) => {
  const held = heldWriter(3);
  const writer = new GroupWriter(held.writeMany, { maxGroup: 10, maxRunning: 1 });
  const writes = [1, 2, 3, 4].map((i) => writer.write(i).catch((error: Error) => error.message));
  await held.releaseAll();
  t.same(held.groups, [[1], [2, 3, 4], [2], [3], [4]]);
  t.same(await Promise.all(writes), ['row 1', 'row 2', 'refused 3', 'row 4']);
});

t.test('a group that fails for another reason than a row fails every write at once, without retrying one by one', async (t) => {
  const held = heldWriter(3, '08006');
  const writer = new GroupWriter(held.writeMany, { maxGroup: 10, maxRunning: 1 });
  const writes = [1, 2, 3, 4].map((i) => writer.write(i).catch((error: Error) => error.message));
  await held.releaseAll();
  t.same(held.groups, [[1], [2, 3, 4]]);
  t.same(await Promise.all(writes), ['row 1', 'refused 3', 'refused 3', 'refused 3']);
});
