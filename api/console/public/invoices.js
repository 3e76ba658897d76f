// An invoice's page: its fields and "Resend invoice", which e-mails it to its customer with the
// page to pay it at.

import { resendEmailAction } from './actions.js';
import { h, later, link, money, section, statusOf } from './dom.js';
import { renderDetail } from './lists.js';

/** An invoice, v1 or v2: who pays it, what is still due and its name for people. */
function facts(invoice) {
  return {
    customerId: invoice.customer_id ?? invoice.payer?.account_id,
    due: invoice.amount_due ?? invoice.totals?.balance_due,
    name: invoice.number ? `${invoice.number} (${invoice.id})` : invoice.id,
  };
}

/** Leads with what is due, when and its state, then what can be done: e-mail it to its customer. */
export function renderInvoice(main, id) {
  renderDetail(main, 'invoices', id, () => [], (invoice) => {
    const { due } = facts(invoice);
    return [
      h('p', { class: 'summary' }, [invoice.number && `Number ${invoice.number}`, `${money(due, 'USD')} due ${invoice.due_date}`, statusOf(invoice), invoice.description].filter(Boolean).join(' · ')),
      section('E-mail', later(() => resendInvoice(invoice))),
    ];
  });
}

/** The confirmation names the invoice, what is due, when, and the address; the API refuses an invoice with nothing due. */
function resendInvoice(invoice) {
  const { customerId, due, name } = facts(invoice);
  const amount = money(due, 'USD');
  return resendEmailAction({
    customerId,
    path: `/invoices/${encodeURIComponent(invoice.id)}/resend_email`,
    label: 'Resend invoice…',
    confirmation: (customer) => ({
      title: 'E-mail this invoice?',
      message: `E-mail invoice ${name} for ${amount} due ${invoice.due_date}, with a page to pay it, to ${customer.email}.`,
      confirm: `Send ${amount} invoice to ${customer.email}`,
    }),
    queued: (sent) => [`Queued for ${sent.recipient} (message ${sent.resend + 1}) with payment link `, link(sent.payment_link_id, 'payment_links', sent.payment_link_id), '; the worker sends it now.'],
  });
}
