/**
 * Unit tier: the Reports view's calendar (api/console/public/reports.js, the module the browser
 * loads): which weeks and months a range of UTC days covers, and the period before it. The
 * browser tests compare the view's numbers with the API's aggregates; these cover the calendar's
 * edges that payments made today cannot reach.
 */
import t from 'tap';

interface Range { from: string; to: string; days: number; previous: { from: string; to: string } }
const reports = await import(new URL('../../api/console/public/reports.js', import.meta.url).href) as {
  bucketsOf: (from: string, to: string, period: string) => string[];
  rangeOf: (state: Record<string, string>, today?: string) => Range;
};

t.test('a week is named by its Monday: a Sunday belongs to the week before', async (t) => {
  t.same(reports.bucketsOf('2026-11-01', '2026-11-16', 'week'), ['2026-10-26', '2026-11-02', '2026-11-09', '2026-11-16']);
  t.same(reports.bucketsOf('2026-12-28', '2027-01-04', 'week'), ['2026-12-28', '2027-01-04'], 'across a new year');
});

t.test('months and days cover the range, empty ones included, leap day and all', async (t) => {
  t.same(reports.bucketsOf('2028-01-31', '2028-03-01', 'month'), ['2028-01', '2028-02', '2028-03']);
  t.same(reports.bucketsOf('2028-02-28', '2028-03-01', 'day'), ['2028-02-28', '2028-02-29', '2028-03-01']);
  t.same(reports.bucketsOf('2026-11-05', '2026-11-05', 'day'), ['2026-11-05']);
});

t.test('the previous period is as many days, just before; an unreadable or reversed range reads sensibly', async (t) => {
  t.same(reports.rangeOf({ from: '2026-11-01', to: '2026-11-10' }), { from: '2026-11-01', to: '2026-11-10', days: 10, previous: { from: '2026-10-22', to: '2026-10-31' } });
  t.same(reports.rangeOf({ from: '2026-03-01', to: '2026-03-31' }).previous, { from: '2026-01-29', to: '2026-02-28' });
  t.match(reports.rangeOf({ from: '2026-11-10', to: '2026-11-01' }), { from: '2026-11-01', to: '2026-11-10' });
  t.match(reports.rangeOf({ from: '2026-02-30', to: 'soon' }, '2026-11-28'), { from: '2026-11-01', to: '2026-11-28' }, 'this month so far');
});
