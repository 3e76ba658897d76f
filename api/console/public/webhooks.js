// Webhook deliveries, seen three ways: a webhook's attempts, an event's delivery to each webhook it
// went to, and one delivery (one event to one webhook) with every attempt and what the receiver
// answered. Each offers "Resend", which starts a new attempt series (POST /webhooks/{id}/resend
// {event_id}), delivered or not, and refreshes the attempts shown when its first attempt arrives.

import { api, listPage } from './api.js';
import { errorBox, h, later, link, pager, route, section, show, table, text } from './dom.js';
import { renderDetail, triggeredOn } from './lists.js';

const ATTEMPTS_SHOWN = 50;
/** Attempt series an event page reads (one first attempt each) to find the webhooks it went to. */
const SERIES_READ = 100;

/** An attempt still out, or one whose worker stopped before the answer was recorded, is neither delivered nor failed. */
const PENDING_OUTCOMES = {
  in_flight: 'In flight (sent, no answer yet)',
  unknown: 'Outcome unknown (the worker stopped before the answer was recorded; retried)',
};

function outcome(log) {
  if (PENDING_OUTCOMES[log.status]) return h('span', { class: 'status status-pending' }, PENDING_OUTCOMES[log.status]);
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

/** A region that says how a resend goes; polite, so a screen reader hears it. */
function resendNotice() {
  return h('p', { class: 'notice', role: 'status', 'aria-live': 'polite' });
}

/** A webhook: its fields and its attempts, newest first, a page at a time, each one resendable. */
export function renderWebhook(main, id, state, navigate) {
  const notice = resendNotice();
  const attempts = h('div', {});
  const load = async () => {
    const page = await listPage(`/webhooks/${encodeURIComponent(id)}/logs`, { offset: state.offset ?? 0 });
    return h('div', {},
      table([
        { label: 'Event', cell: (o) => link(o.event_id, 'webhooks', id, o.event_id) },
        { label: 'Trigger', cell: (o) => text(o.trigger) },
        ...attemptColumns,
        { label: 'Resend', cell: (o) => resendButton(id, o.event_id, notice, refresh, `Resend ${o.event_id}`) },
      ], page.rows, { empty: 'No delivery attempts yet.' }),
      pager(page, (offset) => navigate({ offset })));
  };
  const refresh = async () => attempts.replaceChildren(await load());
  attempts.append(later(load));
  renderDetail(main, 'webhooks', id, () => [section('Delivery attempts', notice, attempts)]);
}

/** One event's delivery to one webhook. */
export function renderDelivery(main, webhookId, eventId) {
  const [actions, attempts] = delivery(webhookId, eventId);
  show(main, `Delivery of ${eventId}`,
    h('p', {}, 'To webhook ', h('a', { href: route('webhooks', webhookId) }, webhookId), '.'),
    actions,
    section('Attempts', attempts));
}

/** An event: what fired it, and its delivery to each webhook it was sent to. */
export function renderEvent(main, eventId) {
  show(main, `Event ${eventId}`,
    h('p', {}, h('a', { href: route('events') }, 'All events')),
    later(async () => {
      // Every attempt series starts with attempt 1, so these name each webhook the event went to.
      const firsts = await api('GET', '/webhook_logs', { params: { event_id: eventId, attempt: '1', limit: String(SERIES_READ) } });
      const latest = firsts.values[0];
      if (!latest) return h('p', { class: 'empty' }, 'This event was not sent to any webhook.');
      return h('div', {},
        h('p', {}, `Trigger ${latest.trigger}, fired by `, triggeredOn(latest), '.'),
        [...Map.groupBy(firsts.values, (log) => log.webhook_id)].map(([webhookId, [log]]) => section(['Webhook ', link(webhookId, 'webhooks', webhookId)],
          h('p', {}, `Sent to ${text(log.url)}`),
          ...delivery(webhookId, eventId, `Resend to ${webhookId}`))));
    }));
}

/** Resend for one delivery, and its attempts, which refresh when the resend's attempt arrives. */
function delivery(webhookId, eventId, label) {
  const notice = resendNotice();
  const attempts = h('div', {});
  const load = async () => attemptTable(await attemptsOf(webhookId, eventId, ATTEMPTS_SHOWN));
  const refresh = async () => attempts.replaceChildren(await load());
  attempts.append(later(load));
  return [h('div', { class: 'actions' }, resendButton(webhookId, eventId, notice, refresh, label), notice), attempts];
}

async function attemptsOf(webhookId, eventId, limit) {
  const answer = await api('GET', `/webhooks/${encodeURIComponent(webhookId)}/logs`, { params: { event_id: eventId, limit: String(limit) } });
  return answer.values;
}

function attemptTable(attempts) {
  return table([
    ...attemptColumns,
    { label: 'Response', cell: (o) => (o.response ? h('pre', { class: 'response' }, o.response) : text(o.error)) },
  ], attempts, { empty: 'No attempts yet.' });
}

/** "Resend"; `label` tells a screen reader which one, where a page has several. */
function resendButton(webhookId, eventId, notice, refresh, label) {
  return h('button', { type: 'button', 'aria-label': label, onclick: (event) => resendEvent(webhookId, eventId, event.currentTarget, notice, refresh) }, 'Resend');
}

async function resendEvent(webhookId, eventId, button, notice, refresh) {
  button.disabled = true;
  notice.replaceChildren(`Resending ${eventId}…`);
  try {
    const before = await newestAttempt(webhookId, eventId);
    await api('POST', `/webhooks/${encodeURIComponent(webhookId)}/resend`, { body: { event_id: eventId } });
    notice.replaceChildren(`Resent ${eventId}: a new attempt series started. Waiting for its first attempt…`);
    const arrived = await waitForNewAttempt(webhookId, eventId, before, notice);
    await refresh();
    notice.replaceChildren(arrived
      ? `The new attempt arrived: ${eventId}, listed first.`
      : `Resent ${eventId}. The attempt has not been made yet; refresh the page to see it when it is.`);
  } catch (error) {
    notice.replaceChildren(errorBox(error));
  } finally {
    button.disabled = false;
  }
}

/** The id of the event's latest attempt at this webhook, or null before any. */
async function newestAttempt(webhookId, eventId) {
  return (await attemptsOf(webhookId, eventId, 1))[0]?.id ?? null;
}

/**
 * Polls until an attempt newer than `before` is logged (the worker makes it), for up to 20 s, or
 * until the operator leaves the page that shows `notice`. Answers whether one was.
 */
async function waitForNewAttempt(webhookId, eventId, before, notice) {
  const until = Date.now() + 20_000;
  while (Date.now() < until && notice.isConnected) {
    if (await newestAttempt(webhookId, eventId) !== before) return true;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return false;
}
