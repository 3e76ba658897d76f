/** Unit tier: the moments a test clock move passes (api/families/billing_schedules/testClock.ts). */
import t from 'tap';
import { clockMoments } from '../../api/families/billing_schedules/testClock.ts';

const iso = (moments: Date[]) => moments.map((m) => m.toISOString());

t.test('a move across days passes each daily run at 00:05 UTC in order, ending at the new time', async (t) => {
  t.same(iso(clockMoments(new Date('2026-11-23T10:00:00Z'), new Date('2026-11-25T00:05:00Z'))), ['2026-11-24T00:05:00.000Z', '2026-11-25T00:05:00.000Z']);
});

t.test('a move within a day passes no daily run, only the new time', async (t) => {
  t.same(iso(clockMoments(new Date('2026-11-23T10:00:00Z'), new Date('2026-11-23T12:00:00Z'))), ['2026-11-23T12:00:00.000Z']);
});
