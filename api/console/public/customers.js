// A customer's page: who they are, the payment methods they keep, what they paid and what they
// were billed, and a payment link made out to them.

import { api, quote } from './api.js';
import { h, later, money, route, section, statusBadge, table, text } from './dom.js';
import { renderDetail } from './lists.js';

const RELATED_LIMIT = '50';

async function related(path, q) {
  return (await api('GET', path, { params: { q, limit: RELATED_LIMIT, order_by: 'desc(created_at)' } })).values;
}

function methodText(method) {
  if (method.card) return `${text(method.card.card_brand)} ${String(method.card.card_number ?? '').slice(-4)} · expires ${text(method.card.expiry)}`;
  if (method.bank_account) return `${text(method.bank_account.account_type)} account ${String(method.bank_account.account_number ?? '').slice(-4)}`;
  return text(method.type);
}

export function renderCustomer(main, id) {
  renderDetail(main, 'customers', id, (customer) => {
    const methods = related('/payment_methods', `customer_id == ${quote(customer.id)}`);
    return [
      section('Payment methods', later(async () => table([
        { label: 'Method', cell: methodText },
        { label: 'Type', cell: (m) => text(m.type) },
        { label: 'Added', cell: (m) => text(m.created_at) },
      ], await methods, { linkTo: null, empty: 'No payment methods kept.' }))),
      section('Transactions', later(async () => {
        // Paid by the customer, or with a method the customer keeps.
        const by = [`customer_id == ${quote(customer.id)}`, ...(await methods).map((m) => `payment_method_id == ${quote(m.id)}`)];
        return table([
          { label: 'Created', cell: (t) => text(t.created_at) },
          { label: 'Type', cell: (t) => text(t.type) },
          { label: 'Status', cell: statusBadge },
          { label: 'Amount', cell: (t) => money(t.amount, t.currency) },
          { label: 'Description', cell: (t) => text(t.description) },
        ], await related('/transactions', by.join(' || ')), { linkTo: (t) => ['transactions', t.id], empty: 'No transactions.' });
      })),
      section('Invoices', later(async () => table([
        { label: 'Created', cell: (i) => text(i.created_at) },
        { label: 'Status', cell: statusBadge },
        { label: 'Due', cell: (i) => text(i.due_date) },
        { label: 'Amount due', cell: (i) => money(i.amount_due) },
      ], await related('/invoices', `customer_id == ${quote(customer.id)}`), { linkTo: (i) => ['invoices', i.id], empty: 'No invoices.' }))),
    ];
  }, (customer) => [
    h('p', { class: 'summary' }, [customer.name, customer.email, customer.phone].filter(Boolean).join(' · ') || customer.id),
    h('p', { class: 'actions' }, h('a', { href: `${route('payment_links')}?customer=${encodeURIComponent(customer.id)}`, class: 'button' }, 'New payment link for this customer')),
  ]);
}
