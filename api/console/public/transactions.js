// A transaction's detail: its fields, then the steps it went through (operations), the events it
// fired (as delivered to webhooks) and the money it moved (ledger entries and transfers).

import { api, quote } from './api.js';
import { later, link, money, section, table, text } from './dom.js';
import { renderDetail } from './lists.js';

const RELATED_LIMIT = '50';

function related(path, q, version = 'v1') {
  return api('GET', path, { params: { q, limit: RELATED_LIMIT }, version }).then((answer) => answer.values);
}

export function renderTransaction(main, id) {
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
  });
}

function laterSection(title, load, columns, empty) {
  return section(title, later(async () => table(columns, await load(), { empty })));
}
