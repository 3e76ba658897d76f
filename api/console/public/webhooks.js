// Webhook deliveries, seen three ways: a webhook's attempts, an event's delivery to each webhook it
// went to, and one delivery (one event to one webhook) with every attempt and what the receiver
// answered. Each offers "Resend", which starts a new attempt series (POST /webhooks/{id}/resend
// {event_id}), delivered or not, and refreshes the attempts shown when its first attempt arrives.
// A webhook's page also shows its health (status, why it is disabled, the last success, the
// failures since) with "Enable and deliver what was missed", "Send test event" and "Rotate secret".

import { api, listPage } from './api.js';
import { actionNotice, change, confirmAction, field, perform } from './actions.js';
import { errorBox, h, later, link, pager, route, section, show, table, text } from './dom.js';
import { renderDetail, triggeredOn } from './lists.js';

const ATTEMPTS_SHOWN = 50;
/** Attempt series an event page reads (one first attempt each) to find the webhooks it went to. */
const SERIES_READ = 100;

/** An attempt still out, or one whose worker stopped before the answer was recorded, is neither delivered nor failed. */
const PENDING_OUTCOMES = {
  in_flight: 'In flight (sent, no answer yet)',
  unknown: 'Outcome unknown (the worker stopped before the answer was recorded; retried)',
  skipped: 'Skipped (the webhook was disabled; not sent)',
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
  renderDetail(main, 'webhooks', id, () => [health(id, refresh), section('Delivery attempts', notice, attempts)]);
}

/** Failed attempts are counted back to the last success this far at most (the API's own bound). */
const STREAK_COUNTED = 1000;

/** The webhook's health and what can be done about it; redrawn after each action. */
function health(id, refreshAttempts) {
  const notice = h('p', { class: 'notice', role: 'status', 'aria-live': 'polite' });
  const body = h('div', {});
  const draw = async () => {
    const webhook = await api('GET', `/webhooks/${encodeURIComponent(id)}`, { params: { fields: '*,health' } });
    const streak = webhook.health.failed_attempts;
    body.replaceChildren(
      h('dl', { class: 'fields' },
        h('dt', {}, 'Status'), h('dd', {}, h('span', { class: `status status-${webhook.status}` }, webhook.status)),
        h('dt', {}, 'Reason'), h('dd', {}, text(webhook.disabled_reason)),
        h('dt', {}, 'Disabled at'), h('dd', {}, text(webhook.disabled_at)),
        h('dt', {}, 'Last success'), h('dd', {}, text(webhook.health.last_delivered_at)),
        h('dt', {}, 'Failure streak'), h('dd', {}, streak === 0 ? 'none' : `${streak >= STREAK_COUNTED ? `${STREAK_COUNTED}+` : streak} failed attempts since the last success${webhook.failing_since ? `, retries running out since ${webhook.failing_since}` : ''}`),
        h('dt', {}, 'Previous secret'), h('dd', {}, webhook.previous_secret_expires_at ? `still signs until ${webhook.previous_secret_expires_at}` : '—')),
      h('div', { class: 'actions' },
        webhook.status === 'disabled' && h('button', { type: 'button', onclick: (event) => act(event.currentTarget, () => enableAndCatchUp(webhook),
          { title: 'Enable this webhook?', message: `Enable ${webhook.id} (${webhook.trigger} → ${webhook.url}) and send it, oldest first, every event it missed.`, confirm: 'Enable and deliver' }) }, 'Enable and deliver what was missed'),
        webhook.status !== 'disabled' && h('button', { type: 'button', class: 'danger', onclick: (event) => act(event.currentTarget, () => disable(webhook),
          { title: 'Disable this webhook?', message: `Disable ${webhook.id}: ${webhook.url} gets no ${webhook.trigger} events until it is enabled again (then the missed ones can be sent).`, confirm: 'Disable webhook' }) }, 'Disable…'),
        webhook.status === 'active' && h('button', { type: 'button', onclick: (event) => act(event.currentTarget, () => sendTestEvent(webhook, notice),
          { title: 'Send a test event?', message: `Send ${webhook.id} one signed test “${webhook.trigger}” event at ${webhook.url}. No other webhook receives it.`, confirm: 'Send test event' }) }, 'Send test event…'),
        h('button', { type: 'button', onclick: (event) => act(event.currentTarget, () => rotateSecret(id),
          { title: 'Rotate the signing secret?', message: `A new signing secret for ${webhook.id}; the old one keeps signing for a day.`, confirm: 'Rotate secret' }) }, 'Rotate secret')),
      notice);
  };
  const act = async (button, action, confirmation) => {
    if (!(await confirmAction(confirmation))) return;
    button.disabled = true;
    notice.replaceChildren('Working…');
    try {
      const said = await action();
      await draw();
      notice.replaceChildren(...said);
      await refreshAttempts();
    } catch (error) {
      button.disabled = false;
      notice.replaceChildren(errorBox(error));
    }
  };
  return section('Health', later(async () => {
    await draw();
    return body;
  }));
}

/**
 * Enables the webhook, then resends, in commit order, every event recorded against it with no
 * successful delivery (skipped while disabled, or failed): `only_missed` makes the window since
 * the webhook was made exact, and a second run finds nothing.
 */
async function enableAndCatchUp(webhook) {
  const path = `/webhooks/${encodeURIComponent(webhook.id)}`;
  await change('PUT', path, { status: 'active' });
  const resent = await change('POST', `${path}/resend`, { since: webhook.created_at, only_missed: true });
  return [`Enabled. ${resent.events} missed event${resent.events === 1 ? '' : 's'} on the way, oldest first.`];
}

async function disable(webhook) {
  await change('PUT', `/webhooks/${encodeURIComponent(webhook.id)}`, { status: 'disabled' });
  return ['Disabled. Events for it are recorded but not sent.'];
}

/** A test event to this webhook alone; says when its attempt was answered (the attempts below show it). */
async function sendTestEvent(webhook, notice) {
  const sent = await change('POST', `/webhooks/${encodeURIComponent(webhook.id)}/test`);
  notice.replaceChildren(`Test event ${sent.event_id} sent. Waiting for its attempt…`);
  const arrived = await waitForNewAttempt(webhook.id, sent.event_id, null, notice);
  const [attempt] = arrived ? await attemptsOf(webhook.id, sent.event_id, 1) : [];
  return attempt
    ? [`Test event ${sent.event_id}: `, outcome(attempt), '.']
    : [`Test event ${sent.event_id} sent. Its attempt has not been made yet; refresh the page to see it when it is.`];
}

/** A new secret, shown here once; the old one keeps signing for a day so receivers can switch. */
async function rotateSecret(id) {
  const rotated = await change('POST', `/webhooks/${encodeURIComponent(id)}/rotate_secret`, { previous_expires_in: 86400 });
  return [
    'New signing secret (shown this once; copy it now): ',
    h('code', { class: 'secret' }, rotated.sender_secret),
    ` Deliveries carry signatures under both secrets until ${rotated.previous_secret_expires_at}.`,
  ];
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
 * Polls until an attempt newer than `before` is logged with its answer (the worker logs it in
 * flight as it goes out, then answered), for up to 20 s, or until the operator leaves the page that
 * shows `notice`. Answers whether one was.
 */
async function waitForNewAttempt(webhookId, eventId, before, notice) {
  const until = Date.now() + 20_000;
  while (Date.now() < until && notice.isConnected) {
    const [newest] = await attemptsOf(webhookId, eventId, 1);
    if (newest && newest.id !== before && newest.status !== 'in_flight') return true;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return false;
}

/** The Webhooks view's form: a trigger and a URL; the new webhook's page opens once it is made. */
export function addWebhook() {
  const trigger = field('webhook-trigger', 'Trigger', { required: true, placeholder: 'payment' });
  const url = field('webhook-url', 'URL', { type: 'url', required: true, placeholder: 'https://example.com/hooks' });
  const notice = actionNotice();
  const button = h('button', { type: 'submit', class: 'primary' }, 'Add webhook…');
  const form = h('form', { class: 'inline-form', onsubmit: async (event) => {
    event.preventDefault();
    const body = { trigger: trigger.input.value.trim(), url: url.input.value.trim() };
    const created = await perform(button, notice, {
      title: 'Add this webhook?', message: `Send every “${body.trigger}” event to ${body.url}.`, confirm: 'Add webhook',
    }, () => change('POST', '/webhooks', body));
    if (created) location.hash = route('webhooks', created.id);
  } }, trigger.node, url.node, button);
  return section('Add a webhook', form, notice);
}
