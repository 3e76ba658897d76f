/**
 * A dispatch pass that was claiming and failed (workers/webhooks/dispatchLoop.ts) may have
 * committed with its answer lost, leaving jobs locked by the process's claims id that no one in
 * it runs: the loop retires that id, so liveness releases whatever it holds. A pass that claimed
 * nothing retires nothing. The database here is a port nothing listens on.
 */
import t, { type Test } from 'tap';
import { createDb } from '../../api/db/connection.ts';
import { freePort } from '../../api/db/embedded.ts';
import { startDispatchLoop } from '../../workers/webhooks/dispatchLoop.ts';
import { eventually } from '../helpers/wait.ts';

async function unreachable(t: Test) {
  const db = createDb(`postgres://postgres@127.0.0.1:${await freePort()}/none`, 1);
  t.teardown(() => db.destroy());
  return db;
}

t.test('a claiming pass that fails retires the claims id; one made without claims does not', async (t) => {
  const db = await unreachable(t);
  let retired = 0;
  let failures = 0;
  const claiming = startDispatchLoop(db, {
    batch: 10, idleMs: 5, onError: () => void (failures += 1),
    claims: { claims: { claim: (lockedBy) => ({ lockedBy, rooms: [] }), run: async () => {}, roomFreed: async () => {} }, lockedBy: () => 'claims-test', retire: () => void (retired += 1) },
  });
  await eventually(() => failures, (n) => n >= 2, 10_000, 10);
  await claiming.stop();
  t.ok(retired >= 2, `each failed claiming pass retired the id (${retired} for ${failures} failures)`);

  let retiredIdle = 0;
  let idleFailures = 0;
  const idle = startDispatchLoop(db, {
    batch: 10, idleMs: 5, onError: () => void (idleFailures += 1),
    claims: { claims: { claim: (lockedBy) => ({ lockedBy, rooms: [] }), run: async () => {}, roomFreed: async () => {} }, lockedBy: () => null, retire: () => void (retiredIdle += 1) },
  });
  await eventually(() => idleFailures, (n) => n >= 2, 10_000, 10);
  await idle.stop();
  t.equal(retiredIdle, 0, 'a pass that claimed nothing retires nothing');
});
