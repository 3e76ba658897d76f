// Building blocks of the console's pages. API data only ever reaches the page as text nodes,
// attribute values or `#/…` links built here: never as HTML.

/** An element: `attrs` are attributes (`on…` ones are listeners), children are nodes or text. */
export function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** A link inside the console: `#/view/id…`, each part encoded, so no API value can become a scheme. */
export function link(text, ...parts) {
  return h('a', { href: route(...parts) }, text);
}

export function route(...parts) {
  return `#/${parts.map((p) => encodeURIComponent(p)).join('/')}`;
}

/** Replaces the content of the main area and gives it a title for screen readers and the tab. */
export function show(main, title, ...content) {
  main.replaceChildren(h('h1', {}, title), ...content.filter(Boolean));
  document.title = `${title} · Settle console`;
}

export function money(amount, currency) {
  if (typeof amount !== 'number') return '—';
  return `${amount.toFixed(2)}${currency ? ` ${currency}` : ''}`;
}

/** v1 `status: "processed"` and v2 `status: {value}` read the same. */
export function statusOf(object) {
  const status = object?.status;
  if (status && typeof status === 'object') return String(status.value ?? '—');
  return status === undefined || status === null ? '—' : String(status);
}

export function statusBadge(object) {
  const status = statusOf(object);
  return h('span', { class: `status status-${status.replace(/[^a-z_]/gi, '')}` }, status);
}

export function text(value) {
  if (value === undefined || value === null || value === '') return '—';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

export function errorBox(error) {
  return h('p', { class: 'error', role: 'alert' }, typeof error?.explain === 'function' ? error.explain() : String(error?.message ?? error));
}

/**
 * A table of `rows` with `columns` [{label, cell(row) → node or text}]. Each row may have a first
 * column that links to its detail (`linkTo(row)` → route parts).
 */
export function table(columns, rows, { linkTo, empty = 'Nothing here yet.' } = {}) {
  if (rows.length === 0) return h('p', { class: 'empty' }, empty);
  const head = h('tr', {}, linkTo ? h('th', { scope: 'col' }, 'ID') : null, columns.map((c) => h('th', { scope: 'col' }, c.label)));
  // Each cell names its column, which a phone shows beside it when a row becomes a card.
  const body = rows.map((row) => h('tr', {},
    linkTo ? h('td', { 'data-label': 'ID' }, link(row.id, ...linkTo(row))) : null,
    columns.map((c) => h('td', { 'data-label': c.label }, c.cell(row)))));
  return h('div', { class: 'table-wrap' }, h('table', {}, h('thead', {}, head), h('tbody', {}, body)));
}

/** Previous / Next for a page from listPage(); `go(offset)` moves. */
export function pager(page, go) {
  const from = page.rows.length ? page.offset + 1 : 0;
  return h('nav', { class: 'pager', 'aria-label': 'Pages' },
    h('button', { type: 'button', disabled: page.offset === 0, onclick: () => go(Math.max(0, page.offset - page.limit)) }, 'Previous'),
    h('span', {}, page.rows.length ? `${from}–${page.offset + page.rows.length}` : 'none'),
    h('button', { type: 'button', disabled: !page.more, onclick: () => go(page.offset + page.limit) }, 'Next'));
}

/** A `q` filter form; `submit(q)` runs it. */
export function filterForm(q, submit, placeholder) {
  const input = h('input', { type: 'search', id: 'filter-q', name: 'q', value: q, placeholder, autocomplete: 'off', spellcheck: 'false' });
  return h('form', { class: 'filter', role: 'search', onsubmit: (event) => {
    event.preventDefault();
    submit(input.value.trim());
  } }, h('label', { for: 'filter-q' }, 'Filter (q)'), input, h('button', { type: 'submit' }, 'Filter'));
}

/**
 * "Download CSV" and the area its errors show in: `load()` answers the file's Blob, which the
 * browser saves as `filename`; an error (the export ceiling, say) shows instead of a download.
 */
export function downloadCsv(filename, load) {
  const errors = h('div', { class: 'download-error' });
  const button = h('button', { type: 'button', onclick: async () => {
    button.disabled = true;
    errors.replaceChildren();
    try {
      saveFile(await load(), filename);
    } catch (error) {
      errors.replaceChildren(errorBox(error));
    } finally {
      button.disabled = false;
    }
  } }, 'Download CSV');
  return h('div', { class: 'actions' }, button, errors);
}

/**
 * The key travels only in a request header, so a plain link to the API cannot download: the
 * fetched Blob gets an object URL for one click of an `<a download>`, then the URL is revoked.
 */
function saveFile(blob, filename) {
  const url = URL.createObjectURL(blob);
  const anchor = h('a', { href: url, download: filename, hidden: true });
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  // Not revoked in this task: a browser may resolve the URL only after the click has returned.
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/**
 * Nothing to show: null, or an object (not a list) whose fields all hold nothing, such as the
 * `oauth_params` of a webhook without OAuth, which the API answers with every field null.
 */
function blank(value) {
  if (value === undefined || value === null) return true;
  return typeof value === 'object' && !Array.isArray(value) && Object.values(value).every(blank);
}

/** Every top-level field of an object: nested values as formatted JSON, as text, "—" for nothing. */
export function fields(object) {
  return h('dl', { class: 'fields' }, Object.entries(object).flatMap(([name, value]) => [
    h('dt', {}, name),
    h('dd', {}, fieldValue(value)),
  ]));
}

function fieldValue(value) {
  if (blank(value)) return '—';
  return typeof value === 'object' ? h('pre', {}, JSON.stringify(value, null, 2)) : text(value);
}

export function section(title, ...content) {
  return h('section', {}, h('h2', {}, title), ...content);
}

/** A placeholder that fills itself when `load()` resolves, or shows its error. */
export function later(load) {
  const box = h('div', { class: 'loading', 'aria-busy': 'true' }, 'Loading…');
  load().then(
    (node) => box.replaceChildren(node),
    (error) => box.replaceChildren(errorBox(error)),
  ).finally(() => {
    box.classList.remove('loading');
    box.removeAttribute('aria-busy');
  });
  return box;
}
