/**
 * A funding date is the environment's date plus the delay in Mon–Fri business days. The database
 * computes it in closed form; here every start day of three years, weekends included, with every
 * count from -2 to 30 (and none), equals stepping through the calendar one day at a time.
 */
import t from 'tap';
import { createDb, rows } from '../api/db/connection.ts';
import { freshDatabase } from './helpers/db.ts';

const db = createDb(await freshDatabase(t), 1);
t.teardown(() => db.destroy());

const DAY = 86_400_000;

function stepBusinessDays(start: string, days: number | null): string {
  let time = Date.parse(`${start}T00:00:00Z`);
  for (let left = days ?? 0; left > 0;) {
    time += DAY;
    const weekday = new Date(time).getUTCDay();
    if (weekday !== 0 && weekday !== 6) left -= 1;
  }
  return new Date(time).toISOString().slice(0, 10);
}

t.test('add_business_days equals a day-by-day count for every start day and count', async (t) => {
  const found = await rows<{ start: string; days: number | null; due: string }>(db, `
    select d::date::text as start, n as days, add_business_days(d::date, n)::text as due
      from generate_series(date '2025-01-01', date '2027-12-31', interval '1 day') d,
           (select generate_series(-2, 30) as n union all select null) counts`);
  t.equal(found.length, 1095 * 34);
  const wrong = found.filter((row) => row.due !== stepBusinessDays(row.start, row.days));
  t.same(wrong.slice(0, 5), [], 'no start day and count differs');
});
