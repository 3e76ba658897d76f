// The console's shell: sign-in, the header (which mode the key is in), the navigation and the
// router. Addresses are `#/view[/id…][?state]`: they name what is shown, never the key.

import { api, forgetKey, keyMode, signIn, storedKey, whenUnauthorized } from './api.js';
import { errorBox, h, route, show } from './dom.js';
import { LISTS, renderDetail, renderList } from './lists.js';
import { renderReports } from './reports.js';
import { renderTransaction } from './transactions.js';
import { addWebhook, renderDelivery, renderEvent, renderWebhook } from './webhooks.js';
import { renderRequest } from './history.js';
import { renderCustomer } from './customers.js';
import { newPaymentLink, renderPaymentLink } from './paymentLinks.js';
import { renderInvoice } from './invoices.js';
import { searchBox } from './search.js';
import { renderKey } from './keys.js';

const root = document.getElementById('console');

const NAVIGATION = [...Object.entries(LISTS).map(([name, view]) => [name, view.title]), ['reports', 'Reports'], ['key', 'API key']];

/** The list views with a form that makes a new one. */
const CREATE = { payment_links: newPaymentLink, webhooks: addWebhook };

function parseAddress() {
  const [path, query = ''] = location.hash.replace(/^#\/?/, '').split('?');
  const parts = path.split('/').filter(Boolean).map((p) => decodeURIComponent(p));
  return { parts, state: Object.fromEntries(new URLSearchParams(query)) };
}

function goTo(parts, state = {}) {
  const query = new URLSearchParams(Object.entries(state).filter(([, v]) => v !== '' && v !== undefined && v !== null && v !== 0)).toString();
  location.hash = `${route(...parts)}${query ? `?${query}` : ''}`;
}

function renderSignIn(message) {
  const error = h('p', { id: 'sign-in-error', class: 'error', role: 'alert' });
  const input = h('input', { id: 'secret-key', name: 'secret-key', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, 'aria-describedby': 'sign-in-help sign-in-error' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const fail = (text) => {
    error.replaceChildren(text);
    input.setAttribute('aria-invalid', 'true');
    input.focus();
  };
  const form = h('form', { class: 'sign-in', onsubmit: async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!keyMode(key)) return fail('That is not a secret key. Secret keys start with test_secret_key_ (test mode) or secret_key_ (live mode).');
    button.disabled = true;
    error.replaceChildren();
    try {
      await signIn(key);
      input.value = '';
      renderShell();
    } catch (failure) {
      fail(failure.status === 401 ? `This key was not accepted: ${failure.message}.` : `Could not sign in: ${failure.explain?.() ?? failure.message}`);
    } finally {
      button.disabled = false;
    }
  } },
  h('h1', {}, 'Settle console'),
  message ? h('p', { class: 'notice', role: 'status' }, message) : null,
  h('label', { for: 'secret-key' }, 'Secret key'),
  input,
  h('p', { id: 'sign-in-help', class: 'help' }, 'The key stays in this browser tab only (session storage) and is gone when the tab closes.'),
  error,
  button);
  root.replaceChildren(h('main', { class: 'sign-in-page' }, form));
  document.title = 'Sign in · Settle console';
  input.focus();
}

function header(mode) {
  const org = h('span', { class: 'org' });
  api('GET', '/accounts/orgs').then((answer) => org.replaceChildren(answer.values[0]?.name ?? ''), () => {});
  const signOut = h('button', { type: 'button', class: 'sign-out', onclick: () => {
    forgetKey();
    history.replaceState(null, '', location.pathname);
    renderSignIn('Signed out.');
  } }, 'Sign out');
  return h('header', { class: `top mode-${mode}` },
    h('span', { class: 'brand' }, 'Settle console'),
    h('span', { class: `mode-badge mode-${mode}`, id: 'mode-badge' }, mode === 'live' ? 'Live mode' : 'Test mode'),
    org,
    searchBox(),
    signOut);
}

function navigation(current) {
  return h('nav', { class: 'views', 'aria-label': 'Views' }, h('ul', {}, NAVIGATION.map(([name, title]) => h('li', {},
    h('a', { href: route(name), 'aria-current': name === current ? 'page' : undefined }, title)))));
}

function renderView(main) {
  const { parts, state } = parseAddress();
  const [view = 'transactions', id, sub] = parts;
  const navigate = (next) => goTo([view, id, sub].filter(Boolean), next);
  if (view === 'reports') return renderReports(main, state, navigate);
  if (view === 'key') return renderKey(main);
  if (!LISTS[view]) return show(main, 'Not found', h('p', {}, 'There is no such view. Choose one above.'));
  if (!id) return renderList(main, view, state, navigate, CREATE[view]?.(state));
  if (view === 'transactions') return renderTransaction(main, id);
  if (view === 'customers') return renderCustomer(main, id);
  if (view === 'events') return renderEvent(main, id);
  if (view === 'requests') return renderRequest(main, id);
  if (view === 'payment_links') return renderPaymentLink(main, id);
  if (view === 'invoices') return renderInvoice(main, id);
  if (view === 'webhooks') return sub ? renderDelivery(main, id, sub) : renderWebhook(main, id, state, navigate);
  return renderDetail(main, view, id);
}

function renderShell() {
  const key = storedKey();
  const mode = keyMode(key ?? '');
  if (!key || !mode) return renderSignIn();
  const view = parseAddress().parts[0] ?? 'transactions';
  const main = h('main', { id: 'main', tabindex: '-1' });
  root.replaceChildren(header(mode), navigation(view), main);
  try {
    renderView(main);
  } catch (error) {
    main.replaceChildren(errorBox(error));
  }
}

whenUnauthorized((error) => {
  forgetKey();
  renderSignIn(`Signed out: the server no longer accepts this key (${error.message}).`);
});

// "/" anywhere but in a field goes to the search box, as in most dashboards.
document.addEventListener('keydown', (event) => {
  const typing = event.target instanceof HTMLElement && event.target.closest('input, textarea, select, [contenteditable]');
  if (event.key !== '/' || typing || event.ctrlKey || event.metaKey || event.altKey) return;
  const search = document.getElementById('search');
  if (!search) return;
  event.preventDefault();
  search.focus();
});

window.addEventListener('hashchange', () => {
  if (storedKey()) renderShell();
});
renderShell();
