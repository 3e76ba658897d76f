/**
 * The test clock (CONTRACT §15) for the billing steps: moving a test environment's clock forward
 * runs, in time order, each day's invoicing run and automatic payments up to the new time, and
 * answers when they are done. The environment's time for these steps is the later of the real
 * time and its clock; `created_at` stays real time. Moves of one environment queue on its clock
 * row. Other timed steps (funding runs, clearing) join the same loop through `steps`.
 */
import type { Db } from '../../db/connection.ts';
import type { DomainServices, Tenant } from '../../engine/family.ts';
import { formatTimestamp, parseDateTime } from '../../schema/values.ts';
import { forbidden, invalidAttributes } from '../../errors.ts';
import { runBillingDay } from './run.ts';
import { createClockIfMissing, findClock, lockClock, setClock } from './testClockRepository.ts';

export interface TestClock {
  object: 'test_clock';
  now: string;
}

/** A step run at each moment the clock passes (each day's 00:05 UTC, then the new time itself). */
export type ClockStep = (db: Db, domain: DomainServices, tenant: Tenant, asOf: Date) => Promise<unknown>;

const DAY_MS = 86_400_000;
/** When the daily runs happen (the worker's crontab: 00:05 UTC). */
const DAILY_RUN_OFFSET_MS = 5 * 60_000;

function later(a: Date, b: Date): Date {
  return a.getTime() >= b.getTime() ? a : b;
}

export async function readTestClock(db: Db, tenant: Tenant, realNow: Date): Promise<TestClock> {
  const clock = await findClock(db, tenant);
  return { object: 'test_clock', now: formatTimestamp(later(clock ?? realNow, realNow)) };
}

/** The moments a move from `from` to `to` passes: each daily run time in (from, to], then `to`. */
export function clockMoments(from: Date, to: Date): Date[] {
  const moments: Date[] = [];
  let run = Math.floor((from.getTime() - DAILY_RUN_OFFSET_MS) / DAY_MS) * DAY_MS + DAY_MS + DAILY_RUN_OFFSET_MS;
  for (; run <= to.getTime(); run += DAY_MS) moments.push(new Date(run));
  if (moments.at(-1)?.getTime() !== to.getTime()) moments.push(to);
  return moments;
}

export async function moveTestClock(db: Db, domain: DomainServices, tenant: Tenant, requested: unknown, steps: ClockStep[] = [runBillingDay]): Promise<TestClock> {
  if (tenant.environment !== 'test') throw forbidden('The test clock belongs to the test environment');
  const to = typeof requested === 'string' ? parseDateTime(requested) : null;
  if (!to) throw invalidAttributes({ now: 'Must be a date and time' });
  const realNow = domain.now();
  // The clock row is the environment's lock: one move at a time, each from where the last ended.
  await db.transaction(async (tx) => {
    await createClockIfMissing(tx, tenant, realNow);
    const current = later(await lockClock(tx, tenant), realNow);
    if (to.getTime() < current.getTime()) throw invalidAttributes({ now: `Must not be before the clock's ${formatTimestamp(current)}` });
    for (const moment of clockMoments(current, to)) for (const step of steps) await step(db, domain, tenant, moment);
    await setClock(tx, tenant, to);
  });
  return { object: 'test_clock', now: formatTimestamp(to) };
}
