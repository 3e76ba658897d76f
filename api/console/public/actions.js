// What an operator can do from the console. Every change goes through the public API with the
// signed-in key (the console names itself, so the audit history says `console`), and only after a
// confirmation that names the amount and the object. A refusal shows the API's own message next to
// the button that asked.

import { api } from './api.js';
import { errorBox, h } from './dom.js';

/**
 * Asks before a change: a modal dialog with what will happen and two buttons. Cancel has the
 * focus, so a stray Enter changes nothing; Escape cancels too. Resolves true when confirmed.
 */
export function confirmAction({ title, message, confirm }) {
  return new Promise((resolve) => {
    const returnTo = document.activeElement;
    const dialog = h('dialog', { class: 'confirm', 'aria-labelledby': 'confirm-title', 'aria-describedby': 'confirm-message' },
      h('h2', { id: 'confirm-title' }, title),
      h('p', { id: 'confirm-message' }, message));
    const finish = (answer) => {
      dialog.close();
      dialog.remove();
      if (returnTo instanceof HTMLElement && returnTo.isConnected) returnTo.focus();
      resolve(answer);
    };
    const cancel = h('button', { type: 'button', onclick: () => finish(false) }, 'Cancel');
    dialog.append(h('div', { class: 'dialog-buttons' }, cancel, h('button', { type: 'button', class: 'primary', onclick: () => finish(true) }, confirm)));
    dialog.addEventListener('cancel', (event) => {
      event.preventDefault();
      finish(false);
    });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}

/** A region for what an action did or why it was refused; a screen reader hears it. */
export function actionNotice() {
  return h('div', { class: 'action-notice', role: 'status', 'aria-live': 'polite' });
}

/**
 * Runs one confirmed change from `button`: asks `confirmation`, then `work()`. Answers what the
 * API answered, or null when the operator cancelled or the API refused, whose message then shows
 * in `notice`.
 */
export async function perform(button, notice, confirmation, work) {
  if (!(await confirmAction(confirmation))) return null;
  button.disabled = true;
  notice.replaceChildren('Working…');
  try {
    const answer = await work();
    notice.replaceChildren();
    return answer;
  } catch (error) {
    notice.replaceChildren(errorBox(error));
    return null;
  } finally {
    button.disabled = false;
  }
}

/**
 * A change through the API: each confirmed action gets an Idempotency-Key of its own, so a request
 * the network repeats is made once.
 */
export function change(method, path, body) {
  return api(method, path, { body, idempotencyKey: crypto.randomUUID() });
}

/** "12.50" or "12.5" from a person → cents, or null when it is no amount. */
export function centsOf(typed) {
  const text = String(typed).trim().replace(/^\$/, '').replace(/,/g, '');
  if (!/^\d{1,10}(\.\d{0,2})?$/.test(text)) return null;
  const [whole, part = ''] = text.split('.');
  return Number(whole) * 100 + Number(part.padEnd(2, '0'));
}

/** Cents as the API's decimal amount and as text: 1250 → 12.5 and "12.50". */
export const amountOf = (cents) => cents / 100;
export const centsText = (cents) => (cents / 100).toFixed(2);

/** A labelled field of a form; `attrs` go to the input. */
export function field(id, label, attrs = {}) {
  const input = h('input', { id, name: id, autocomplete: 'off', spellcheck: 'false', ...attrs });
  return { input, node: h('div', { class: 'field' }, h('label', { for: id }, label), input) };
}

/**
 * A value to copy (a payment link's URL, a new key): shown selectable, with a "Copy" button that
 * puts it on the clipboard and says so.
 */
export function copyable(label, value, id) {
  const shown = h('input', { id, type: 'text', readonly: true, value, class: 'copy-value', spellcheck: 'false' });
  const said = h('span', { class: 'copied', role: 'status' });
  const button = h('button', { type: 'button', onclick: async () => {
    try {
      await navigator.clipboard.writeText(value);
      said.replaceChildren('Copied.');
    } catch {
      shown.select();
      said.replaceChildren('Selected: press Ctrl+C (⌘C) to copy.');
    }
  } }, `Copy ${label}`);
  return h('div', { class: 'copy' }, h('label', { for: id }, label), h('div', { class: 'copy-row' }, shown, button, said));
}

/**
 * "Resend …" for an object e-mailed to its customer (a payment link, an invoice): names the
 * customer and address, asks `confirmation(customer)`, then POSTs `path`; the API refuses what it
 * must (nothing due, an inactive link) and its message shows beside the button.
 */
export async function resendEmailAction({ customerId, path, label, confirmation, queued }) {
  const customer = customerId ? await api('GET', `/customers/${encodeURIComponent(customerId)}`) : null;
  if (!customer?.email) return h('p', { class: 'empty' }, 'It has no customer with an e-mail address to send it to.');
  const notice = actionNotice();
  const button = h('button', { type: 'button', onclick: async () => {
    const sent = await perform(button, notice, confirmation(customer), () => change('POST', path));
    if (sent) notice.replaceChildren(h('p', { class: 'notice' }, queued(sent)));
  } }, label);
  return h('div', {}, h('p', {}, `Its customer: ${customer.name ?? customer.id}, ${customer.email}.`), h('div', { class: 'actions' }, button), notice);
}
