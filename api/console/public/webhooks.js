// Webhooks: each webhook's delivery attempts, and a delivery (one event to one webhook) with every
// attempt, what the receiver answered, and "Resend", which starts a new attempt series
// (POST /webhooks/{id}/resend {event_id}) and shows its attempt when it arrives.

import { api, listPage } from './api.js';
import { errorBox, h, later, link, pager, route, section, show, table, text } from './dom.js';
import { renderDetail } from './lists.js';

const ATTEMPTS_SHOWN = 50;

function outcome(log) {
  const delivered = log.http_status >= 200 && log.http_status < 300;
  const what = log.http_status ? `HTTP ${log.http_status}` : (log.error ?? 'no answer');
  return h('span', { class: `status status-${delivered ? 'delivered' : 'failed'}` }, delivered ? `Delivered (${what})` : `Failed (${what})`);
}

const attemptColumns = [
  { label: 'When', cell: (o) => text(o.created_at) },
  { label: 'Attempt', cell: (o) => text(o.attempt) },
  { label: 'Outcome', cell: outcome },
  { label: 'Time', cell: (o) => (typeof o.duration_ms === 'number' ? `${o.duration_ms} ms` : '—') },
  { label: 'Next attempt', cell: (o) => text(o.next_attempt_at) },
];

/** A webhook: its fields and its attempts, newest first, a page at a time. */
export function renderWebhook(main, id, state, navigate) {
  const logs = later(async () => {
    const page = await listPage(`/webhooks/${encodeURIComponent(id)}/logs`, { offset: state.offset ?? 0 });
    return h('div', {},
      table([
        { label: 'Event', cell: (o) => link(o.event_id, 'webhooks', id, o.event_id) },
        { label: 'Trigger', cell: (o) => text(o.trigger) },
        ...attemptColumns,
      ], page.rows, { empty: 'No delivery attempts yet.' }),
      pager(page, (offset) => navigate({ offset })));
  });
  renderDetail(main, 'webhooks', id, () => [section('Delivery attempts', logs)]);
}

async function attemptsOf(webhookId, eventId) {
  const answer = await api('GET', `/webhooks/${encodeURIComponent(webhookId)}/logs`, { params: { event_id: eventId, limit: String(ATTEMPTS_SHOWN) } });
  return answer.values;
}

function attemptTable(attempts) {
  return table([
    ...attemptColumns,
    { label: 'Response', cell: (o) => (o.response ? h('pre', { class: 'response' }, o.response) : text(o.error)) },
  ], attempts, { empty: 'No attempts yet.' });
}

/** One event's delivery to one webhook. */
export function renderDelivery(main, webhookId, eventId) {
  const attempts = h('div', { id: 'attempts' });
  const notice = h('p', { class: 'notice', role: 'status', 'aria-live': 'polite' });
  const resend = h('button', { type: 'button', class: 'primary', onclick: () => resendEvent(webhookId, eventId, resend, notice, attempts) }, 'Resend');
  show(main, `Delivery of ${eventId}`,
    h('p', {}, 'To webhook ', h('a', { href: route('webhooks', webhookId) }, webhookId), '.'),
    h('div', { class: 'actions' }, resend, notice),
    section('Attempts', attempts));
  attempts.append(later(async () => attemptTable(await attemptsOf(webhookId, eventId))));
}

async function resendEvent(webhookId, eventId, button, notice, attempts) {
  button.disabled = true;
  notice.replaceChildren('Resending…');
  try {
    const before = (await attemptsOf(webhookId, eventId)).length;
    await api('POST', `/webhooks/${encodeURIComponent(webhookId)}/resend`, { body: { event_id: eventId } });
    notice.replaceChildren('Resent: a new attempt series started. Waiting for its first attempt…');
    const latest = await waitForAttempts(webhookId, eventId, before);
    attempts.replaceChildren(attemptTable(latest));
    notice.replaceChildren(latest.length > before
      ? 'The new attempt arrived: see the top row.'
      : 'Resent. The attempt has not been made yet; it will appear here when it is.');
  } catch (error) {
    notice.replaceChildren(errorBox(error));
  } finally {
    button.disabled = false;
  }
}

/** Polls until there are more attempts than `count` (the worker makes them), for up to 20 s. */
async function waitForAttempts(webhookId, eventId, count) {
  const until = Date.now() + 20_000;
  let attempts = await attemptsOf(webhookId, eventId);
  while (attempts.length <= count && Date.now() < until && document.getElementById('attempts')) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    attempts = await attemptsOf(webhookId, eventId);
  }
  return attempts;
}
