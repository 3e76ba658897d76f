// A transaction's detail: what can be done with it (refund, capture, void), its fields, then the
// steps it went through (operations), the events it fired (as delivered to webhooks) and the money
// it moved (ledger entries and transfers).

import { api, quote } from './api.js';
import { actionNotice, amountOf, centsOf, centsText, change, field, perform } from './actions.js';
import { h, later, link, money, section, statusOf, table, text } from './dom.js';
import { renderDetail } from './lists.js';

const RELATED_LIMIT = '50';

function related(path, q, version = 'v1') {
  return api('GET', path, { params: { q, limit: RELATED_LIMIT }, version }).then((answer) => answer.values);
}

/** Refunds (and chargebacks) that count against a payment: those not voided, declined or rejected. */
const UNDONE = ['voided', 'declined', 'rejected'];

/** Cents of a payment already refunded, from the ledger entries that point at it. */
async function refundedCents(id) {
  const entries = await related('/transfers', `assoc_transaction_id == ${quote(id)} && (entry_type == "refund" || entry_type == "chargeback")`);
  if (!entries.length) return 0;
  const ids = [...new Set(entries.map((e) => e.transaction_id))];
  const standing = await related('/transactions', ids.map((t) => `id == ${quote(t)}`).join(' || '));
  const counted = new Set(standing.filter((t) => !UNDONE.includes(statusOf(t))).map((t) => t.id));
  return entries.filter((e) => counted.has(e.transaction_id)).reduce((sum, e) => sum + Math.round(Math.abs(e.amount) * 100), 0);
}

/** The transaction's page; `said` is what the last action did, shown above it. */
export function renderTransaction(main, id, said) {
  const again = (message) => renderTransaction(main, id, message);
  renderDetail(main, 'transactions', id, (transaction) => {
    const ofThis = `transaction_id == ${quote(transaction.id)}`;
    // Nothing about a transaction predates it: the time bound lets the lookups use the tenant's time index.
    const since = `created_at >= date(${transaction.created_at})`;
    return [
      laterSection('Operations', () => related('/transaction_operations', ofThis), [
        { label: 'When', cell: (o) => text(o.created_at) },
        { label: 'Operation', cell: (o) => text(o.type) },
        { label: 'Status', cell: (o) => text(o.status) },
        { label: 'Amount', cell: (o) => money(o.amount) },
      ], 'No operations recorded.'),
      laterSection('Events', () => related('/webhook_logs', `triggered_on.id == ${quote(transaction.id)} && attempt == 1 && ${since}`), [
        { label: 'When', cell: (o) => text(o.created_at) },
        { label: 'Event', cell: (o) => link(o.event_id, 'webhooks', o.webhook_id, o.event_id) },
        { label: 'Trigger', cell: (o) => text(o.trigger) },
        { label: 'Webhook', cell: (o) => link(o.webhook_id, 'webhooks', o.webhook_id) },
      ], 'No events delivered to a webhook.'),
      laterSection('Ledger and transfers', () => related('/transfers', `(${ofThis} || assoc_transaction_id == ${quote(transaction.id)}) && ${since}`, 'v2'), [
        { label: 'When', cell: (o) => text(o.created_at) },
        { label: 'Type', cell: (o) => text(o.type) },
        { label: 'Amount', cell: (o) => money(o.amount) },
        { label: 'Account', cell: (o) => text(o.account_id) },
        { label: 'Transaction', cell: (o) => (o.transaction_id === transaction.id ? text(o.transaction_id) : link(o.transaction_id, 'transactions', o.transaction_id)) },
        { label: 'Related', cell: (o) => (o.assoc_transaction_id && o.assoc_transaction_id !== transaction.id ? link(o.assoc_transaction_id, 'transactions', o.assoc_transaction_id) : text(o.assoc_transaction_id)) },
      ], 'No ledger entries.'),
    ];
  }, (transaction) => [
    h('p', { class: 'summary' }, [`${money(transaction.amount, transaction.currency)} ${text(transaction.type)}`, statusOf(transaction), transaction.description, transaction.order_number && `order ${transaction.order_number}`].filter(Boolean).join(' · ')),
    section('Actions', said ? h('p', { class: 'notice', role: 'status' }, ...[said].flat()) : null, later(() => transactionActions(transaction, again))),
  ]);
}

function laterSection(title, load, columns, empty) {
  return section(title, later(async () => table(columns, await load(), { empty })));
}

/** Who the transaction is, in a confirmation: its amount, its id and what it was for. */
function named(transaction) {
  return `${transaction.id}${transaction.description ? ` (“${transaction.description}”)` : ''}`;
}

/** The buttons a transaction in this state offers; after a change, `again(message)` redraws the page. */
async function transactionActions(transaction, again) {
  const status = statusOf(transaction);
  const currency = transaction.currency ?? 'USD';
  const notice = actionNotice();
  const parts = [];
  if (transaction.type === 'payment' && status === 'authorized') {
    const total = `${money(transaction.amount)} ${currency}`;
    const capture = h('button', { type: 'button', class: 'primary', onclick: async () => {
      if (await perform(capture, notice, { title: 'Capture this authorization?', message: `Capture ${total} of ${named(transaction)}. The customer is charged.`, confirm: `Capture ${total}` },
        () => change('PUT', `/transactions/${encodeURIComponent(transaction.id)}`, { status: 'processed' }))) again(`Captured ${total}.`);
    } }, `Capture ${total}…`);
    parts.push(h('div', { class: 'actions' }, capture, voidButton(transaction, notice, again)));
  } else if (transaction.type === 'payment' && status === 'processed') {
    const refunded = await refundedCents(transaction.id);
    parts.push(refundForm(transaction, refunded, notice, again));
    // A payment with refunds is not voided (the API refuses): what remains is refunded instead.
    if (refunded === 0) parts.push(h('div', { class: 'actions' }, voidButton(transaction, notice, again)));
  } else {
    parts.push(h('p', { class: 'empty' }, `Nothing to do with a ${status} ${transaction.type ?? 'transaction'}.`));
  }
  return h('div', {}, ...parts, notice);
}

function voidButton(transaction, notice, again) {
  const total = `${money(transaction.amount)} ${transaction.currency ?? 'USD'}`;
  const button = h('button', { type: 'button', class: 'danger', onclick: async () => {
    if (await perform(button, notice, { title: 'Void this transaction?', message: `Void ${total} of ${named(transaction)}. Nothing of it will be charged; this cannot be undone.`, confirm: `Void ${total}` },
      () => change('PUT', `/transactions/${encodeURIComponent(transaction.id)}`, { status: 'voided' }))) again(`Voided ${total}.`);
  } }, `Void ${total}…`);
  return button;
}

/** A refund of the whole remaining amount or a part of it; says how much remains refundable. */
function refundForm(transaction, refunded, notice, again) {
  const currency = transaction.currency ?? 'USD';
  const paid = Math.round(transaction.amount * 100);
  const remaining = Math.max(0, paid - refunded);
  const summary = h('p', { id: 'refundable' }, `Refundable: ${centsText(remaining)} ${currency} of ${centsText(paid)} ${currency}.`);
  if (remaining === 0) return h('div', {}, summary);
  const amount = field('refund-amount', `Refund amount (${currency})`, { inputmode: 'decimal', value: centsText(remaining), 'aria-describedby': 'refundable' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Refund…');
  const form = h('form', { class: 'inline-form', onsubmit: async (event) => {
    event.preventDefault();
    const cents = centsOf(amount.input.value);
    if (cents === null || cents === 0) {
      notice.replaceChildren(h('p', { class: 'error', role: 'alert' }, 'Type an amount, such as 12.50.'));
      amount.input.focus();
      return;
    }
    const what = `${centsText(cents)} ${currency}`;
    const whole = cents === remaining ? 'the whole remaining amount' : `part of the remaining ${centsText(remaining)} ${currency}`;
    const refund = await perform(button, notice, { title: 'Refund this payment?', message: `Refund ${what} of ${named(transaction)} — ${whole}. The money goes back to the customer.`, confirm: `Refund ${what}` },
      () => change('POST', '/transactions', { type: 'refund', amount: amountOf(cents), ledger: [{ assoc_transaction_id: transaction.id }] }));
    if (refund) again([`Refunded ${what}: `, link(refund.id, 'transactions', refund.id), '.']);
  } }, amount.node, button);
  return h('div', {}, summary, form);
}
