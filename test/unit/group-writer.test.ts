/**
 * Unit tier: group commit. A lone write goes at the end of its turn of the event loop; writes of
 * one turn, or arriving while the writer's statements are running, go together as one; beside a
 * running statement a second starts only for enough writes; a group the database refuses for a row
 * is written again one by one, so only the write at fault fails; a group that fails otherwise (the
 * database unreachable) fails every write at once.
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

/** The end of this turn of the event loop, where a writer starts what waits. */
const turn = () => new Promise((resolve) => setImmediate(resolve));

t.test('a lone write goes at the end of its turn; writes arriving while one runs go together as the next statement', async (t) => {
  const held = heldWriter();
  const writer = new GroupWriter(held.writeMany, { maxGroup: 3, maxRunning: 1 });
  const first = writer.write(1);
  await turn();
  t.same(held.groups, [[1]], 'the first write did not wait for another');
  const rest = [2, 3, 4, 5].map((i) => writer.write(i));
  await turn();
  t.same(held.groups, [[1]], 'the others wait while it runs');
  await held.releaseAll();
  t.same(held.groups, [[1], [2, 3, 4], [5]], 'then go in groups of at most 3');
  t.same(await Promise.all([first, ...rest]), ['row 1', 'row 2', 'row 3', 'row 4', 'row 5'], 'each answered with its own row');
});

t.test('writes of one turn go together as one statement', async (t) => {
  const held = heldWriter();
  const writer = new GroupWriter(held.writeMany, { maxGroup: 10, maxRunning: 2 });
  const writes = [1, 2, 3].map((i) => writer.write(i));
  await turn();
  t.same(held.groups, [[1, 2, 3]], 'one statement, not one for each of the first two');
  await held.releaseAll();
  t.same(await Promise.all(writes), ['row 1', 'row 2', 'row 3']);
});

t.test('with two statements at once, the writes after them wait for one of them', async (t) => {
  const held = heldWriter();
  const writer = new GroupWriter(held.writeMany, { maxGroup: 10, maxRunning: 2 });
  const writes = [writer.write(1)];
  await turn();
  writes.push(writer.write(2));
  await turn();
  t.same(held.groups, [[1], [2]], 'a second statement beside the first');
  writes.push(writer.write(3), writer.write(4));
  await turn();
  t.same(held.groups, [[1], [2]], 'no third');
  await held.releaseAll();
  t.same(held.groups, [[1], [2], [3, 4]]);
  t.same(await Promise.all(writes), ['row 1', 'row 2', 'row 3', 'row 4']);
});

t.test('beside a running statement a second starts only once minBeside writes wait', async (t) => {
  const held = heldWriter();
  const writer = new GroupWriter(held.writeMany, { maxGroup: 10, maxRunning: 2, minBeside: 3 });
  const writes = [writer.write(1)];
  await turn();
  for (const i of [2, 3]) {
    writes.push(writer.write(i));
    await turn();
  }
  t.same(held.groups, [[1]], 'two waiting writes do not start a statement beside the running one');
  writes.push(writer.write(4));
  await turn();
  t.same(held.groups, [[1], [2, 3, 4]], 'the third does');
  writes.push(writer.write(5));
  await turn();
  t.same(held.groups, [[1], [2, 3, 4]], 'none starts while two run');
  await held.releaseAll();
  t.same(held.groups, [[1], [2, 3, 4], [5]], 'a lone write goes once nothing runs');
  t.same(await Promise.all(writes), ['row 1', 'row 2', 'row 3', 'row 4', 'row 5']);
});

t.test('a failing group is written again one by one: only the write at fault fails', async (t) => {
  const held = heldWriter(3);
  const writer = new GroupWriter(held.writeMany, { maxGroup: 10, maxRunning: 1 });
  const writes = [writer.write(1)];
  await turn();
  writes.push(...[2, 3, 4].map((i) => writer.write(i)));
  const answers = writes.map((write) => write.catch((error: Error) => error.message));
  await held.releaseAll();
  t.same(held.groups, [[1], [2, 3, 4], [2], [3], [4]]);
  t.same(await Promise.all(answers), ['row 1', 'row 2', 'refused 3', 'row 4']);
});

t.test('a group that fails for another reason than a row fails every write at once, without retrying one by one', async (t) => {
  const held = heldWriter(3, '08006');
  const writer = new GroupWriter(held.writeMany, { maxGroup: 10, maxRunning: 1 });
  const writes = [writer.write(1)];
  await turn();
  writes.push(...[2, 3, 4].map((i) => writer.write(i)));
  const answers = writes.map((write) => write.catch((error: Error) => error.message));
  await held.releaseAll();
  t.same(held.groups, [[1], [2, 3, 4]]);
  t.same(await Promise.all(answers), ['row 1', 'refused 3', 'refused 3', 'refused 3']);
});

t.test('writes fewer than minBeside start beside a statement that keeps running past besideAfterMs', async (t) => {
  const held = heldWriter();
  const writer = new GroupWriter(held.writeMany, { maxGroup: 10, maxRunning: 2, minBeside: 8, besideAfterMs: 5 });
  const writes = [writer.write(1)];
  await turn();
  writes.push(writer.write(2));
  await turn();
  t.same(held.groups, [[1]], 'one waiting write does not start a statement at once');
  // The first statement never ends here (a row lock held elsewhere): the second goes beside it.
  const started = await Promise.race([
    (async () => { while (held.groups.length < 2) await new Promise((resolve) => setTimeout(resolve, 5)); return true; })(),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5000).unref()),
  ]);
  t.ok(started, 'the waiting write goes beside the held statement');
  t.same(held.groups, [[1], [2]]);
  await held.releaseAll();
  t.same(await Promise.all(writes), ['row 1', 'row 2']);
});
