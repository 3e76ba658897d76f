/** SQL of `test_clocks`: one row per test environment that moved its clock, the environment's lock. */
import { rows, type Db } from '../../db/connection.ts';
import type { Tenant } from '../../engine/family.ts';

/** The environment's clock, or null when it never moved. */
export async function findClock(db: Db, tenant: Tenant): Promise<Date | null> {
  const [found] = await rows<{ now: Date }>(db, 'select now from test_clocks where org_id = ? and environment = ?', [tenant.orgId, tenant.environment]);
  return found?.now ?? null;
}

/** Makes the environment's clock row at `initial` unless it has one. */
export async function createClockIfMissing(tx: Db, tenant: Tenant, initial: Date): Promise<void> {
  await rows(tx, 'insert into test_clocks (org_id, environment, now) values (?, ?, ?) on conflict do nothing', [tenant.orgId, tenant.environment, initial]);
}

/** The environment's clock, its row locked for the rest of the transaction (the row must exist). */
export async function lockClock(tx: Db, tenant: Tenant): Promise<Date> {
  const [clock] = await rows<{ now: Date }>(tx, 'select now from test_clocks where org_id = ? and environment = ? for update', [tenant.orgId, tenant.environment]);
  return clock.now;
}

export async function setClock(tx: Db, tenant: Tenant, to: Date): Promise<void> {
  await rows(tx, 'update test_clocks set now = ?, modified_at = now() where org_id = ? and environment = ?', [to, tenant.orgId, tenant.environment]);
}
