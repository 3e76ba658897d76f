// A new payment link: amount, description and, optionally, the customer it is for; once made, its
// URL to copy and send. A link's page sends its e-mail to its customer again.

import { actionNotice, amountOf, centsOf, centsText, change, copyable, field, perform, resendEmailAction } from './actions.js';
import { h, later, link, money, section, statusOf } from './dom.js';
import { renderDetail } from './lists.js';

/** The Payment links view's form; `state.customer` (from a customer's page) fills the customer. */
export function newPaymentLink(state = {}) {
  const amount = field('link-amount', 'Amount (USD)', { inputmode: 'decimal', required: true });
  const description = field('link-description', 'Description', { required: true, maxlength: '1024' });
  const customer = field('link-customer', 'Customer id (optional)', { value: state.customer ?? '', placeholder: 'acct_…' });
  const notice = actionNotice();
  const made = h('div', {});
  const button = h('button', { type: 'submit', class: 'primary' }, 'Create payment link…');
  const form = h('form', { class: 'inline-form', onsubmit: async (event) => {
    event.preventDefault();
    const cents = centsOf(amount.input.value);
    if (cents === null || cents === 0) {
      notice.replaceChildren(h('p', { class: 'error', role: 'alert' }, 'Type an amount, such as 25.00.'));
      return amount.input.focus();
    }
    const what = `${centsText(cents)} USD`;
    const who = customer.input.value.trim();
    const body = { type: 'one_time', amount: amountOf(cents), description: description.input.value.trim() };
    if (who) body.customer_id = who;
    const created = await perform(button, notice, {
      title: 'Create this payment link?',
      message: `A payment link for ${what}, “${body.description}”${who ? ` for customer ${who}` : ''}.`,
      confirm: `Create link for ${what}`,
    }, () => change('POST', '/payment_links', body));
    if (!created) return;
    made.replaceChildren(
      h('p', { class: 'notice', role: 'status' }, 'Payment link ', link(created.id, 'payment_links', created.id), ` made for ${what}.`),
      copyable('URL', created.url, 'link-url'));
    made.querySelector('button')?.focus();
  } }, amount.node, description.node, customer.node, button);
  return section('New payment link', form, notice, made);
}

/** A payment link: what it asks for, its URL to copy and, when it has a customer, "Resend e-mail"; then its fields. */
export function renderPaymentLink(main, id) {
  renderDetail(main, 'payment_links', id, () => [], (paymentLink) => [
    h('p', { class: 'summary' }, [`${typeof paymentLink.amount === 'number' ? money(paymentLink.amount, 'USD') : 'Any amount'}`, paymentLink.description, statusOf(paymentLink)].filter(Boolean).join(' · ')),
    copyable('URL', paymentLink.url, 'link-page-url'),
    section('E-mail', later(() => resendEmail(paymentLink))),
  ]);
}

/** The confirmation names the link, its amount and the address; the API refuses what it must (an inactive link, no address). */
function resendEmail(paymentLink) {
  const amount = typeof paymentLink.amount === 'number' ? `${paymentLink.amount.toFixed(2)} USD` : 'an amount the payer chooses';
  return resendEmailAction({
    customerId: paymentLink.customer_id ?? paymentLink.payer?.account_id,
    path: `/payment_links/${encodeURIComponent(paymentLink.id)}/resend_email`,
    label: 'Resend e-mail…',
    confirmation: (customer) => ({
      title: 'Send this payment link again?',
      message: `E-mail payment link ${paymentLink.id} for ${amount}, “${paymentLink.description}”, to ${customer.email} again.`,
      confirm: `Resend to ${customer.email}`,
    }),
    queued: (sent) => `Queued for ${sent.recipient} (resend ${sent.resend}); the worker sends it now.`,
  });
}
