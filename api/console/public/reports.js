// Reports: volume or count of transactions by day, week or month over a date range, split by
// status, type or processing account, against the period of the same length just before. The
// numbers are the API's transaction aggregates (answered by the reporting process), one row per
// day and group; weeks and months are sums of those days. Drawn with uPlot (served by Settle
// itself, a global from its script), listed as a table, and the table downloads as CSV.

import { api } from './api.js';
import { downloadCsv, h, later, show, table } from './dom.js';

export const PERIODS = [['day', 'Day'], ['week', 'Week'], ['month', 'Month']];
export const SPLITS = [['', 'Nothing (total)'], ['status', 'Status'], ['type', 'Type'], ['processing_id', 'Processing account']];
export const MEASURES = [['volume', 'Volume (sum of amounts)'], ['count', 'Number of transactions']];

/** The most day-and-group rows one range asks for: a year of days by a dozen groups, and more. */
const MAX_ROWS = 10000;
/** Groups drawn as their own line; the rest are summed as "Other". */
const MAX_SERIES = 8;
const COLORS = ['#1b5fd1', '#0f8a5f', '#c2410c', '#7c3aed', '#b91c1c', '#0e7490', '#a16207', '#475569', '#be185d'];
const DAY_MS = 86_400_000;

const pick = (options, value) => (options.some(([v]) => v === value) ? value : options[0][0]);
const labelOf = (options, value) => options.find(([v]) => v === value)[1];

/** A UTC calendar day 'YYYY-MM-DD' ↔ its midnight in ms. */
const dayMs = (day) => Date.parse(`${day}T00:00:00Z`);
const dayOf = (ms) => new Date(ms).toISOString().slice(0, 10);
const validDay = (day) => typeof day === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(day) && dayOf(dayMs(day)) === day;

/** The bucket a day falls in: itself, the Monday of its week, or its month. */
function bucketOf(day, period) {
  if (period === 'month') return day.slice(0, 7);
  if (period === 'week') {
    const ms = dayMs(day);
    return dayOf(ms - ((new Date(ms).getUTCDay() + 6) % 7) * DAY_MS);
  }
  return day;
}

/** Every bucket from `from` to `to` (inclusive days), in order, empty ones included. */
export function bucketsOf(from, to, period) {
  const seen = [];
  for (let ms = dayMs(from); ms <= dayMs(to); ms += DAY_MS) {
    const bucket = bucketOf(dayOf(ms), period);
    if (seen[seen.length - 1] !== bucket) seen.push(bucket);
  }
  return seen;
}

function bucketLabel(bucket, period) {
  return period === 'week' ? `week of ${bucket}` : bucket;
}

/** The range as the page asks for it: this month so far unless the address says otherwise. */
export function rangeOf(state, today = dayOf(Date.now())) {
  let from = validDay(state.from) ? state.from : `${today.slice(0, 8)}01`;
  let to = validDay(state.to) ? state.to : today;
  if (from > to) [from, to] = [to, from];
  const days = Math.round((dayMs(to) - dayMs(from)) / DAY_MS) + 1;
  return { from, to, days, previous: { from: dayOf(dayMs(from) - days * DAY_MS), to: dayOf(dayMs(from) - DAY_MS) } };
}

/** The aggregate query of one range: a row per day and group, with its sum and count. */
export function reportParams({ from, to }, split, q) {
  const keys = ['date(created_at)', ...(split ? [split] : [])];
  // Whole UTC days by date(created_at): the reporting process answers that from its rollup by day
  // (a bare created_at bound is finer than a day and reads every transaction of the range).
  const within = `date(created_at) >= date(${from}) && date(created_at) <= date(${to})`;
  return {
    fields: [...keys, 'sum(amount)', 'count'].join(','),
    group_by: keys.join(','),
    q: q ? `${within} && (${q})` : within,
    limit: String(MAX_ROWS),
  };
}

/** One range's day-and-group rows; `ask` is the API call (a benchmark passes its own). */
export async function daysOf(range, split, q, ask = api) {
  const rows = (await ask('GET', '/transactions', { params: reportParams(range, split, q) })).values;
  if (rows.length >= MAX_ROWS) throw new Error(`More than ${MAX_ROWS} day-and-group rows: choose a shorter range or fewer groups.`);
  return rows;
}

/** A day row's value: cents for volume (summed exactly), a count for count. */
function valueOf(row, measure) {
  return measure === 'count' ? Number(row.count) : Math.round(Number(row['sum(amount)'] ?? 0) * 100);
}

const shown = (value, measure) => (measure === 'count' ? String(value) : (value / 100).toFixed(2));

/**
 * The report's numbers: for each bucket of the range, the value of each group and their total,
 * and the previous period's total in the bucket at the same place.
 */
function tabulate(range, period, split, measure, rows, previousRows, names = new Map()) {
  const buckets = bucketsOf(range.from, range.to, period);
  const at = new Map(buckets.map((b, i) => [b, i]));
  const groupOf = (row) => (split ? names.get(row[split]) ?? String(row[split] ?? '—') : 'Total');
  const totals = new Map();
  for (const row of rows) totals.set(groupOf(row), (totals.get(groupOf(row)) ?? 0) + valueOf(row, measure));
  const ranked = [...totals.keys()].sort((a, b) => totals.get(b) - totals.get(a) || a.localeCompare(b));
  const groups = ranked.length > MAX_SERIES ? [...ranked.slice(0, MAX_SERIES - 1), 'Other'] : ranked;
  const series = new Map(groups.map((g) => [g, buckets.map(() => 0)]));
  for (const row of rows) {
    const group = series.has(groupOf(row)) ? groupOf(row) : 'Other';
    series.get(group)[at.get(bucketOf(row['date(created_at)'], period))] += valueOf(row, measure);
  }
  const total = buckets.map((_, i) => groups.reduce((sum, g) => sum + series.get(g)[i], 0));
  const previousBuckets = bucketsOf(range.previous.from, range.previous.to, period);
  const previousAt = new Map(previousBuckets.map((b, i) => [b, i]));
  const previous = previousBuckets.map(() => 0);
  for (const row of previousRows ?? []) previous[previousAt.get(bucketOf(row['date(created_at)'], period))] += valueOf(row, measure);
  return { buckets, groups, split: Boolean(split), series, total, previous: previousRows ? buckets.map((_, i) => previous[i] ?? 0) : null };
}

function change(now, before) {
  if (before === 0) return now === 0 ? '0%' : '—';
  const percent = ((now - before) / before) * 100;
  return `${percent > 0 ? '+' : ''}${percent.toFixed(1)}%`;
}

/** The table's columns and rows: what the page lists and the CSV holds. */
function reportTable(report, period, measure) {
  const groups = report.split ? report.groups : [];
  const header = ['Period', ...groups, 'Total', ...(report.previous ? ['Previous period', 'Change'] : [])];
  const rows = report.buckets.map((bucket, i) => [
    bucketLabel(bucket, period),
    ...groups.map((g) => shown(report.series.get(g)[i], measure)),
    shown(report.total[i], measure),
    ...(report.previous ? [shown(report.previous[i], measure), change(report.total[i], report.previous[i])] : []),
  ]);
  const sum = (values) => values.reduce((a, b) => a + b, 0);
  const all = sum(report.total);
  rows.push(['All', ...groups.map((g) => shown(sum(report.series.get(g)), measure)), shown(all, measure),
    ...(report.previous ? [shown(sum(report.previous), measure), change(all, sum(report.previous))] : [])]);
  return { header, rows };
}

function csvOf({ header, rows }) {
  const cell = (value) => (/[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value);
  return [header, ...rows].map((row) => row.map(cell).join(',')).join('\r\n') + '\r\n';
}

/** The chart: a line per group (or the total), the previous period dashed. */
function chart(report, period, measure, title) {
  const box = h('div', { class: 'chart-box', role: 'img', 'aria-label': title });
  const figure = h('figure', { class: 'chart-figure' }, h('figcaption', {}, title), box);
  const { uPlot } = window;
  if (!uPlot) return figure;
  const xs = report.buckets.map((_, i) => i);
  // A line per group (one group keeps its name); nothing in the range draws a flat total.
  const lines = report.groups.length ? report.groups : ['Total'];
  const data = [xs, ...lines.map((g) => (report.series.get(g) ?? report.total).map((v) => (measure === 'count' ? v : v / 100)))];
  const series = [
    { label: labelOf(PERIODS, period), value: (_, i) => (i === null || !report.buckets[i] ? '—' : bucketLabel(report.buckets[i], period)) },
    ...lines.map((g, i) => ({ label: g, stroke: COLORS[i % COLORS.length], width: 2, points: { size: 6 }, value: (_, v) => (v === null ? '—' : shown(measure === 'count' ? v : Math.round(v * 100), measure)) })),
  ];
  if (report.previous) {
    data.push(report.previous.map((v) => (measure === 'count' ? v : v / 100)));
    series.push({ label: 'Previous period (total)', stroke: '#8a8f98', dash: [6, 4], width: 2, value: (_, v) => (v === null ? '—' : shown(measure === 'count' ? v : Math.round(v * 100), measure)) });
  }
  const options = {
    // Until the box is laid out its width is unknown: never wider than the screen.
    width: Math.min(600, document.documentElement.clientWidth - 60),
    height: 280,
    scales: { x: { time: false } },
    axes: [
      { values: (_, ticks) => ticks.map((t) => (Number.isInteger(t) && report.buckets[t] ? report.buckets[t] : '')) },
      { size: 70 },
    ],
    series,
  };
  const plot = new uPlot(options, data, box);
  // The chart follows its box's width: a phone draws it narrow, a desktop wide.
  new ResizeObserver(() => {
    const width = Math.max(240, box.clientWidth);
    if (width !== plot.width) plot.setSize({ width, height: width < 500 ? 220 : 280 });
  }).observe(box);
  return figure;
}

/** Processing accounts shown by name (with the end of their id: two may share a name). */
const ACCOUNTS_READ = '1000';

async function accountNames() {
  const accounts = (await api('GET', '/processing_accounts', { params: { fields: 'id,name', limit: ACCOUNTS_READ } })).values;
  return new Map(accounts.map((a) => [a.id, `${a.name ?? 'unnamed'} (…${a.id.slice(-6)})`]));
}

function select(id, label, options, value) {
  const element = h('select', { id, name: id }, options.map(([v, l]) => h('option', { value: v, selected: v === value }, l)));
  return h('div', { class: 'field' }, h('label', { for: id }, label), element);
}

function dateField(id, label, value) {
  return h('div', { class: 'field' }, h('label', { for: id }, label), h('input', { id, name: id, type: 'date', value, required: true }));
}

export function renderReports(main, state, navigate) {
  const range = rangeOf(state);
  const period = pick(PERIODS, state.period);
  const split = pick(SPLITS, state.by ?? 'status');
  const measure = pick(MEASURES, state.measure);
  const compare = state.compare !== 'off';
  const q = h('input', { type: 'search', id: 'report-q', value: state.q ?? '', placeholder: 'currency == "USD"', autocomplete: 'off', spellcheck: 'false' });
  const compareBox = h('input', { type: 'checkbox', id: 'report-compare', checked: compare });
  const form = h('form', { class: 'report-form', onsubmit: (event) => {
    event.preventDefault();
    const value = (id) => form.querySelector(`#${id}`).value;
    navigate({ from: value('report-from'), to: value('report-to'), period: value('report-period'), by: value('report-by') || 'none',
      measure: value('report-measure'), compare: compareBox.checked ? '' : 'off', q: q.value.trim() });
  } },
  dateField('report-from', 'From', range.from),
  dateField('report-to', 'To', range.to),
  select('report-period', 'By', PERIODS, period),
  select('report-measure', 'Measure', MEASURES, measure),
  select('report-by', 'Split by', SPLITS, split),
  h('div', { class: 'field check' }, compareBox, h('label', { for: 'report-compare' }, 'Compare with the previous period')),
  h('div', { class: 'field grow' }, h('label', { for: 'report-q' }, 'Only transactions where (q)'), q),
  h('button', { type: 'submit', class: 'primary' }, 'Show'));
  const title = `${labelOf(MEASURES, measure).replace(/ \(.*\)/, '')} by ${period}${split ? `, split by ${labelOf(SPLITS, split).toLowerCase()}` : ''}, ${range.from} to ${range.to}`;
  let file = null;
  const download = downloadCsv(`report-${measure}-by-${period}-${range.from}-to-${range.to}.csv`, async () => {
    if (!file) throw new Error('The report is still loading.');
    return new Blob([csvOf(file)], { type: 'text/csv' });
  });
  show(main, 'Reports', form, later(async () => {
    const [rows, previousRows] = await Promise.all([daysOf(range, split, state.q), compare ? daysOf(range.previous, split, state.q) : null]);
    const report = tabulate(range, period, split, measure, rows, previousRows, split === 'processing_id' ? await accountNames() : undefined);
    file = reportTable(report, period, measure);
    const all = file.rows[file.rows.length - 1];
    const totalAt = file.header.indexOf('Total');
    return h('div', {},
      h('p', { class: 'summary', id: 'report-summary' }, `${labelOf(MEASURES, measure).replace(/ \(.*\)/, '')}: ${all[totalAt]}`,
        compare ? ` against ${all[totalAt + 1]} from ${range.previous.from} to ${range.previous.to} (${all[totalAt + 2]})` : '', '.'),
      chart(report, period, measure, title),
      download,
      h('div', { class: 'report-data' }, table(file.header.map((label, i) => ({ label, cell: (row) => row[i] })), file.rows, { empty: 'No transactions in this range.' })));
  }));
}
