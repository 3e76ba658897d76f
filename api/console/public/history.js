// Who did what: an object's audit history (on its page) and one logged request with the changes
// it made (the Requests view's detail).

import { api } from './api.js';
import { fields, h, later, link, section, show, table, text } from './dom.js';

const HISTORY_LIMIT = '100';

function actorText(actor) {
  if (!actor) return '—';
  const who = [actor.key_prefix ? `${actor.key_prefix}…` : null, actor.name].filter(Boolean).join(' ');
  return who ? `${actor.type} ${who}` : actor.type;
}

function changesText(changes) {
  const shown = (value) => (value === null || value === undefined ? '—' : typeof value === 'object' ? JSON.stringify(value) : String(value));
  const lines = Object.entries(changes ?? {}).map(([name, [before, after]]) => `${name}: ${shown(before)} → ${shown(after)}`);
  return lines.length ? h('pre', {}, lines.join('\n')) : '—';
}

const COLUMNS = [
  { label: 'When', cell: (e) => text(e.created_at) },
  { label: 'Action', cell: (e) => text(e.action) },
  { label: 'Who', cell: (e) => actorText(e.actor) },
  { label: 'Changes', cell: (e) => changesText(e.changes) },
  { label: 'Request', cell: (e) => (e.request_id ? link(e.request_id, 'requests', e.request_id) : '—') },
];

function auditTable(params, empty) {
  return later(async () => {
    const answer = await api('GET', '/audit_events', { params: { ...params, limit: HISTORY_LIMIT, order_by: 'desc(created_at)' } });
    return table(COLUMNS, answer.values, { empty });
  });
}

/** The History section of an object's page. */
export function historySection(id) {
  return section('History', auditTable({ object_id: id }, 'No recorded changes.'));
}

/** One logged request: its row, then the audit events it caused. */
export function renderRequest(main, id) {
  show(main, `Request ${id}`,
    h('p', {}, link('All requests', 'requests')),
    later(async () => {
      const [logged] = (await api('GET', '/request_logs', { params: { id, limit: '1' } })).values;
      return logged ? section('Request', fields(logged)) : h('p', {}, 'This request is not in the log (yet, or any more).');
    }),
    section('Changes it made', auditTable({ request_id: id }, 'This request changed nothing.')));
}
