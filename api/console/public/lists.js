// The collection views: a `q` filter, one page of rows (newest first), a CSV of every row the
// filter matches, and each object's detail. Each view is data: which API path and version, which
// columns.

import { api, csvExport, listPage } from './api.js';
import { downloadCsv, fields, filterForm, h, later, link, money, pager, route, section, show, statusBadge, table, text } from './dom.js';
import { historySection } from './history.js';

/** A column showing one field as text, or as money. */
const field = (label, name) => ({ label, cell: (o) => text(o[name]) });
const amount = (label, name, currency) => ({ label, cell: (o) => money(o[name], currency && o.currency) });
const created = field('Created', 'created_at');
const status = { label: 'Status', cell: statusBadge };

/**
 * Views by route name; `title` is also the navigation name, `version` the API version the view
 * reads (v1 unless it names one), `params` what it always asks its collection.
 */
export const LISTS = {
  transactions: {
    title: 'Transactions', path: '/transactions', example: 'status == "processed" && amount > 10',
    columns: [
      created,
      field('Type', 'type'),
      status,
      amount('Amount', 'amount', true),
      field('Description', 'description'),
      { label: 'Method', cell: methodText },
    ],
  },
  customers: {
    title: 'Customers', path: '/customers', example: 'email ? "*@example.com"',
    columns: [
      created,
      field('Name', 'name'),
      field('E-mail', 'email'),
      field('Phone', 'phone'),
    ],
  },
  events: {
    title: 'Events', path: '/webhook_logs', params: { attempt: '1' }, example: 'trigger == "payment"',
    note: 'Events as they were sent to your webhooks, one row per event and webhook.',
    detail: false,
    columns: [
      created,
      { label: 'Event', cell: (o) => link(o.event_id, 'events', o.event_id) },
      field('Trigger', 'trigger'),
      { label: 'Object', cell: triggeredOn },
      { label: 'Webhook', cell: (o) => link(o.webhook_id, 'webhooks', o.webhook_id) },
    ],
  },
  webhooks: {
    title: 'Webhooks', path: '/webhooks', example: 'trigger == "payment"',
    columns: [
      created, status,
      field('Trigger', 'trigger'),
      field('URL', 'url'),
      field('Retries', 'retries'),
    ],
  },
  invoices: {
    title: 'Invoices', path: '/invoices', example: 'status == "unpaid"',
    columns: [
      created, status,
      field('Customer', 'customer_id'),
      field('Due', 'due_date'),
      amount('Total', 'total_due'),
      amount('Amount due', 'amount_due'),
    ],
  },
  billing_schedules: {
    title: 'Billing schedules', path: '/billing_schedules', example: 'recurring_frequency == "monthly"',
    columns: [
      created,
      field('Customer', 'customer_id'),
      field('Frequency', 'recurring_frequency'),
      field('Starts', 'start_date'),
      { label: 'Charges', cell: (o) => String(Array.isArray(o.charges) ? o.charges.length : 0) },
    ],
  },
  payment_links: {
    title: 'Payment links', path: '/payment_links', example: 'type == "one_time"',
    columns: [
      created, status,
      field('Type', 'type'),
      field('Description', 'description'),
      amount('Amount', 'amount'),
    ],
  },
  intents: {
    title: 'Intents', path: '/intents', example: 'type == "checkout_link"',
    columns: [
      created, status,
      field('Type', 'type'),
      field('Expires', 'expires_at'),
    ],
  },
  processing_accounts: {
    title: 'Processing accounts', path: '/processing_accounts', example: 'status == "active"', balance: true,
    columns: [
      created, status,
      field('Name', 'name'),
      field('Funding', 'funding_style'),
      { label: 'Balance', cell: (o) => balanceText(o.balance) },
    ],
  },
  requests: {
    title: 'Requests', path: '/request_logs', example: 'status >= 400 && path ? "/customers*" && key_prefix == "test_secret_key_…"',
    note: 'Every API request, newest first. Filter by status, path or key; open one to see what it changed.',
    csv: false,
    columns: [
      created,
      field('Method', 'method'),
      field('Path', 'path'),
      field('Status', 'status'),
      field('Key', 'key_prefix'),
      field('ms', 'duration_ms'),
    ],
  },
};

function methodText(transaction) {
  const method = transaction.payment_method;
  if (!method) return '—';
  const number = method.card?.card_number ?? method.bank_account?.account_number ?? '';
  return `${method.card?.card_brand ?? method.type ?? ''} ${String(number).slice(-4)}`.trim();
}

/** The object whose change fired a logged event, linked to its page where the console has one. */
export function triggeredOn(log) {
  const on = log.triggered_on ?? {};
  const view = { transaction: 'transactions', invoice: 'invoices', payment_link: 'payment_links', intent: 'intents' }[on.object];
  if (view && on.id) return h('a', { href: route(view, on.id) }, `${on.object} ${on.id}`);
  return text(on.id ? `${on.object ?? ''} ${on.id}` : null);
}

/** A processing account's balance, once the API has it: a number, or amounts by kind. */
export function balanceText(balance) {
  if (balance === undefined || balance === null) return '—';
  if (typeof balance === 'number') return money(balance);
  if (typeof balance === 'object') {
    const amounts = Object.entries(balance).filter(([, v]) => typeof v === 'number');
    if (amounts.length) return amounts.map(([k, v]) => `${k} ${money(v)}`).join(', ');
  }
  return text(balance);
}

/**
 * `fields=*,balance` while the API may not know `balance` yet: that 400 names the field, and the
 * same request without it answers (the column shows "—").
 */
async function withOptionalBalance(request) {
  try {
    return await request(['*', 'balance']);
  } catch (error) {
    if (error.status === 400 && error.details && 'balance' in error.details) return request(null);
    throw error;
  }
}

/** What a view asks its collection, whatever the page: its own params, its order, the filter. */
function viewParams(view, q) {
  // Webhook logs come newest first by themselves (and fastest so); everything else is asked to.
  const params = view.path === '/webhook_logs' ? { ...view.params } : { ...view.params, order_by: 'desc(created_at)' };
  if (q) params.q = q;
  return params;
}

/** `read(params)` with the view's params, and `fields=*,balance` for a view that shows a balance. */
function readView(view, q, read) {
  const params = viewParams(view, q);
  if (!view.balance) return read(params);
  return withOptionalBalance((fieldList) => read(fieldList ? { ...params, fields: fieldList.join(',') } : params));
}

function fetchPage(view, { q, offset }) {
  return readView(view, q, (params) => listPage(view.path, { params, offset, version: view.version }));
}

/** Every row the view's filter matches, not one page: no limit, no offset. */
function exportCsv(view, q) {
  return readView(view, q, (params) => csvExport(view.path, { params, version: view.version }));
}

/**
 * The list view: `state` is {q, offset} from the address; `navigate(state)` changes it. `create`
 * is the view's form for making a new one, where it has one.
 */
export function renderList(main, name, state, navigate, create = null) {
  const view = LISTS[name];
  const results = later(async () => {
    const page = await fetchPage(view, state);
    return h('div', {},
      table(view.columns, page.rows, { linkTo: view.detail === false ? null : (o) => [name, o.id], empty: state.q ? 'Nothing matches this filter.' : 'Nothing here yet.' }),
      pager(page, (offset) => navigate({ ...state, offset })));
  });
  show(main, view.title,
    view.note ? h('p', { class: 'note' }, view.note) : null,
    create,
    filterForm(state.q ?? '', (q) => navigate({ q, offset: 0 }), view.example),
    view.csv === false ? null : downloadCsv(`${name}.csv`, () => exportCsv(view, state.q)),
    results);
}

/**
 * Any object's detail: `lead(object)` first (what it is at a glance, what can be done with it),
 * its fields as the API shows them, then the view's `extra(object)` sections and its history.
 */
export function renderDetail(main, name, id, extra = () => [], lead = () => []) {
  const view = LISTS[name];
  const path = `${view.path}/${encodeURIComponent(id)}`;
  show(main, `${view.title.replace(/s$/, '')} ${id}`,
    h('p', {}, h('a', { href: route(name) }, `All ${view.title.toLowerCase()}`)),
    later(async () => {
      const object = view.balance
        ? await withOptionalBalance((list) => api('GET', path, { params: list ? { fields: list.join(',') } : undefined }))
        : await api('GET', path);
      return h('div', {}, ...lead(object), section('Fields', fields(object)), ...extra(object), historySection(object.id));
    }));
}
