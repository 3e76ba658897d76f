// Reports: a group-by with one aggregate over transactions, answered by the reporting process
// (the API sends transaction aggregates there), drawn as bars in plain SVG, listed as a table and
// downloadable as CSV.

import { api, csvExport } from './api.js';
import { downloadCsv, h, later, show, table, text } from './dom.js';

export const GROUPS = [
  ['status', 'Status'],
  ['type', 'Type'],
  ['date(created_at)', 'Day'],
  ['month(created_at)', 'Month of year'],
  ['payment_method_type', 'Payment method type'],
  ['card_brand', 'Card brand'],
  ['processing_id', 'Processing account'],
];

export const MEASURES = [
  ['count', 'Number of transactions'],
  ['sum(amount)', 'Total amount'],
  ['avg(amount)', 'Average amount'],
  ['max(amount)', 'Largest amount'],
  ['min(amount)', 'Smallest amount'],
];

/** Groups beyond this are not drawn: a chart of thousands of bars says nothing. */
const MAX_GROUPS = 100;

function labelOf(options, value) {
  return options.find(([v]) => v === value)[1];
}

function select(id, label, options, value) {
  const element = h('select', { id, name: id }, options.map(([v, l]) => h('option', { value: v, selected: v === value }, l)));
  return [h('label', { for: id }, label), element];
}

export function renderReports(main, state, navigate) {
  const group = GROUPS.some(([v]) => v === state.group) ? state.group : GROUPS[0][0];
  const measure = MEASURES.some(([v]) => v === state.measure) ? state.measure : MEASURES[0][0];
  const [groupLabel, groupSelect] = select('report-group', 'Group by', GROUPS, group);
  const [measureLabel, measureSelect] = select('report-measure', 'Measure', MEASURES, measure);
  const q = h('input', { type: 'search', id: 'report-q', value: state.q ?? '', placeholder: 'created_at >= date(2026-01-01)', autocomplete: 'off', spellcheck: 'false' });
  const form = h('form', { class: 'report-form', onsubmit: (event) => {
    event.preventDefault();
    navigate({ group: groupSelect.value, measure: measureSelect.value, q: q.value.trim() });
  } },
  h('div', {}, groupLabel, groupSelect),
  h('div', {}, measureLabel, measureSelect),
  h('div', { class: 'grow' }, h('label', { for: 'report-q' }, 'Only transactions where (q)'), q),
  h('button', { type: 'submit' }, 'Show'));
  const params = { fields: `${group},${measure}`, group_by: group };
  if (state.q) params.q = state.q;
  const title = `${labelOf(MEASURES, measure)} by ${labelOf(GROUPS, group).toLowerCase()}`;
  // The file asks for every group (no limit); only what is drawn stops at MAX_GROUPS.
  const download = downloadCsv(`${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}.csv`, () => csvExport('/transactions', { params }));
  show(main, 'Reports', form, download, later(async () => {
    const rows = (await api('GET', '/transactions', { params: { ...params, limit: String(MAX_GROUPS) } })).values;
    const groupOf = (row) => text(row[group]);
    const valueOf = (row) => Number(row[measure] ?? 0);
    return h('div', {},
      barChart(title, rows.map((row) => ({ label: groupOf(row), value: valueOf(row) })), (value) => formatValue(value, measure)),
      table([
        { label: labelOf(GROUPS, group), cell: groupOf },
        { label: labelOf(MEASURES, measure), cell: (row) => formatValue(valueOf(row), measure) },
      ], rows, { empty: 'No transactions match.' }));
  }));
}

function formatValue(value, measure) {
  return measure === 'count' ? String(value) : value.toFixed(2);
}

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs = {}, content) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  if (content !== undefined) element.textContent = content;
  return element;
}

/** Horizontal bars, one per group, longest = largest; labels and values as SVG text. */
export function barChart(title, bars, format = String) {
  if (bars.length === 0) return h('p', { class: 'empty' }, 'Nothing to chart.');
  const rowHeight = 28;
  const labelWidth = 200;
  const chartWidth = 560;
  const width = labelWidth + chartWidth + 90;
  const height = bars.length * rowHeight + 10;
  const largest = Math.max(...bars.map((b) => Math.abs(b.value)), 0) || 1;
  const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': title, class: 'chart' });
  chart.append(svg('title', {}, title));
  bars.forEach((bar, i) => {
    const y = i * rowHeight + 5;
    const length = Math.max(1, Math.round((Math.abs(bar.value) / largest) * chartWidth));
    chart.append(
      svg('text', { x: labelWidth - 8, y: y + 17, 'text-anchor': 'end', class: 'bar-label' }, bar.label.length > 28 ? `${bar.label.slice(0, 27)}…` : bar.label),
      svg('rect', { x: labelWidth, y, width: length, height: rowHeight - 8, rx: 3, class: 'bar' }),
      svg('text', { x: labelWidth + length + 6, y: y + 17, class: 'bar-value' }, format(bar.value)),
    );
  });
  return h('figure', { class: 'chart-figure' }, h('figcaption', {}, title), chart);
}
