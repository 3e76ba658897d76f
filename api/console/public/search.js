// One search box, in the header of every view, over customers and transactions: an id, an
// e-mail, a name, the last four digits of a card or account, an amount or an order number. It
// answers as the operator types; the arrow keys move through what it found, Escape closes it.

import { api, quote } from './api.js';
import { h, money, route, statusOf } from './dom.js';

/** Rows shown of each kind: enough to pick from; a list view with `q` shows more. */
const SHOWN = 6;
/** Keys typed closer together than this make one search, not one each. */
const PAUSE_MS = 180;

/**
 * Text a term matches: from three characters anywhere in it, a shorter term at its start. The
 * trigram indexes (migration 20261202000200) find a part of three characters or more; one or two
 * characters anywhere have no trigram to look up and would read every row of the tenant.
 */
export function textPattern(term) {
  return quote(term.length >= 3 ? `*${term}*` : `${term}*`);
}

/** Customers a term names: its id, or part of its e-mail or name (matching ignores case). */
export function customerQuery(term) {
  const like = textPattern(term);
  return `id == ${quote(term)} || email ? ${like} || name ? ${like}`;
}

/**
 * Transactions a term names: its id, part of its order number or description, the last digits
 * of its card or account, its amount; and those of the customers the term found.
 */
export function transactionQuery(term, customerIds = [], methodIds = []) {
  const like = textPattern(term);
  const parts = [`id == ${quote(term)}`, `order_number ? ${like}`, `description ? ${like}`];
  if (/^\d{2,4}$/.test(term)) {
    const ending = quote(`*${term}`);
    parts.push(`payment_method.card.card_number ? ${ending}`, `payment_method.bank_account.account_number ? ${ending}`);
  }
  const amount = term.replace(/^\$/, '').replace(/,/g, '');
  if (/^\d{1,12}(\.\d{1,2})?$/.test(amount)) parts.push(`amount == ${amount}`);
  for (const id of customerIds) parts.push(`customer_id == ${quote(id)}`);
  for (const id of methodIds) parts.push(`payment_method_id == ${quote(id)}`);
  return parts.join(' || ');
}

/** A customer's payments may name only the method they kept, not the customer. */
const METHODS_READ = 50;

/** What a term finds: customers, then transactions (theirs among them). `ask` is the API call (a benchmark passes its own). */
export async function find(term, ask = api) {
  const params = (q, limit = SHOWN) => ({ q, limit: String(limit), order_by: 'desc(created_at)' });
  const customers = (await ask('GET', '/customers', { params: params(customerQuery(term)) })).values;
  const ids = customers.map((c) => c.id);
  const methods = ids.length
    ? (await ask('GET', '/payment_methods', { params: params(ids.map((id) => `customer_id == ${quote(id)}`).join(' || '), METHODS_READ) })).values
    : [];
  const transactions = (await ask('GET', '/transactions', { params: params(transactionQuery(term, ids, methods.map((m) => m.id))) })).values;
  return { customers, transactions };
}

function lastFour(transaction) {
  const method = transaction.payment_method;
  const number = method?.card?.card_number ?? method?.bank_account?.account_number;
  return number ? `…${String(number).slice(-4)}` : '';
}

function results(term, { customers, transactions }) {
  const item = (href, ...lines) => h('li', {}, h('a', { href, class: 'result' }, ...lines.filter(Boolean).map((line) => h('span', {}, line))));
  const group = (title, rows, line) => rows.length
    ? [h('h2', {}, title), h('ul', {}, rows.map(line))]
    : [];
  const found = [
    ...group('Customers', customers, (c) => item(route('customers', c.id), c.name ?? c.id, c.email, c.id)),
    ...group('Transactions', transactions, (t) => item(route('transactions', t.id),
      `${money(t.amount, t.currency)} ${t.type} ${statusOf(t)}`,
      [t.description, t.order_number && `order ${t.order_number}`, lastFour(t)].filter(Boolean).join(' · '),
      `${t.id} · ${t.created_at}`)),
  ];
  return found.length ? [h('p', { class: 'search-for' }, `Found for “${term}”:`), ...found] : [h('p', { class: 'empty' }, `Nothing found for “${term}”.`)];
}

/** The header's search box and the panel it answers in. */
export function searchBox() {
  const panel = h('div', { id: 'search-results', class: 'search-results', role: 'region', 'aria-label': 'Search results', 'aria-live': 'polite', hidden: true });
  const input = h('input', { type: 'search', id: 'search', name: 'search', autocomplete: 'off', spellcheck: 'false',
    placeholder: 'Search e-mail, name, last 4, amount, order… ( / )', 'aria-controls': 'search-results', 'aria-keyshortcuts': '/' });
  let asked = 0;
  let timer;
  const close = () => {
    panel.hidden = true;
  };
  const run = async () => {
    const term = input.value.trim();
    const mine = ++asked;
    if (!term) return close();
    try {
      const found = await find(term);
      if (mine === asked) panel.replaceChildren(...results(term, found));
    } catch (error) {
      if (mine === asked) panel.replaceChildren(h('p', { class: 'error', role: 'alert' }, error.explain?.() ?? error.message));
    }
    if (mine === asked) panel.hidden = false;
  };
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(run, PAUSE_MS);
  });
  const links = () => [...panel.querySelectorAll('a')];
  const move = (event, step) => {
    const all = links();
    if (!all.length) return;
    event.preventDefault();
    const at = all.indexOf(document.activeElement);
    if (at + step < 0) return input.focus();
    all[Math.min(all.length - 1, at + step)].focus();
  };
  const form = h('form', { class: 'search', role: 'search', onsubmit: (event) => {
    event.preventDefault();
    clearTimeout(timer);
    // Enter opens the first thing found, once it has been found.
    const [first] = links();
    if (first && !panel.hidden) first.click();
    else run();
  }, onkeydown: (event) => {
    if (event.key === 'ArrowDown') move(event, 1);
    else if (event.key === 'ArrowUp') move(event, -1);
    else if (event.key === 'Escape') {
      close();
      input.focus();
    }
  } },
  h('label', { for: 'search', class: 'visually-hidden' }, 'Search customers and transactions'),
  input,
  panel);
  // Following a result closes the panel; the new view is what the operator wanted.
  panel.addEventListener('click', (event) => {
    if (event.target.closest('a')) {
      close();
      input.value = '';
    }
  });
  return form;
}
