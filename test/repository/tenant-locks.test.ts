/**
 * Repository tier: the tenant lock session (api/db/tenantLocks.ts) on a real database. Its one
 * connection serves every tenant's holds, and a hold's release is not awaited by its caller, so
 * the session must send one statement at a time: pg warns (and pg 9 refuses) when a client is sent
 * a query while it is still executing another.
 */
import t from 'tap';
import { TenantLockSession } from '../../api/db/tenantLocks.ts';
import { freshDatabase } from '../helpers/db.ts';

const url = await freshDatabase(t);

t.test('holds of many tenants taken and released at once send their statements one after another', async (t) => {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.message);
  process.on('warning', onWarning);
  t.teardown(() => void process.off('warning', onWarning));
  const session = new TenantLockSession(url);
  t.teardown(() => session.close());
  // The session's socket does not keep a process alive (a web process's requests do): this test does.
  const alive = setInterval(() => {}, 1000);
  t.teardown(() => clearInterval(alive));

  for (let round = 0; round < 5; round++) {
    const holds = await Promise.all(Array.from({ length: 20 }, (_, i) => session.tryShare({ orgId: `org_${i}`, environment: 'test' })));
    t.ok(holds.every((hold) => hold !== null), `round ${round}: every tenant's share granted`);
    // Releases in flight while the next round's shares are asked for.
    for (const hold of holds) hold!.release();
  }
  const again = await session.tryShare({ orgId: 'org_0', environment: 'test' });
  t.ok(again, 'a share is granted after the releases');
  again!.release();
  // A warning is emitted on the next tick after the query that caused it.
  await new Promise((resolve) => setImmediate(resolve));
  t.same(warnings.filter((w) => /already executing a query/.test(w)), [], 'pg never saw a query sent to a busy client');
});
