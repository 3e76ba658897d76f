// The signed-in key: which one it is, and rolling it. The new key is shown once, here, to copy;
// this tab goes on with it at once, and the old one works for as long as the operator chose.

import { api, storedKey, useKey } from './api.js';
import { actionNotice, copyable, perform } from './actions.js';
import { h, section, show } from './dom.js';

const OVERLAPS = [['0', 'stops at once'], ['3600', 'works one more hour'], ['86400', 'works one more day'], ['604800', 'works one more week']];

/** A key as `settle keys list` shows it: the secret without its last 24 characters. */
const prefixOf = (key) => `${key.slice(0, key.length - 24)}…`;

export function renderKey(main) {
  const key = storedKey() ?? '';
  const overlap = h('select', { id: 'key-overlap', name: 'key-overlap' }, OVERLAPS.map(([v, l]) => h('option', { value: v, selected: v === '86400' }, l)));
  const notice = actionNotice();
  const shown = h('div', {});
  const current = h('p', {}, 'Signed in with ', h('code', {}, prefixOf(key)), '.');
  const button = h('button', { type: 'submit', class: 'primary' }, 'Roll key…');
  const form = h('form', { class: 'inline-form', onsubmit: async (event) => {
    event.preventDefault();
    const old = storedKey() ?? '';
    const until = OVERLAPS.find(([v]) => v === overlap.value)[1];
    const rolled = await perform(button, notice, {
      title: 'Roll this key?',
      message: `Roll ${prefixOf(old)}: a new key with the same access is made and shown once; this one ${until}.`,
      confirm: 'Roll key',
    }, () => api('POST', '/api_keys/roll', { body: { expire_in: Number(overlap.value) } }));
    if (!rolled) return;
    useKey(rolled.secret_key);
    current.replaceChildren('Signed in with ', h('code', {}, prefixOf(rolled.secret_key)), '.');
    shown.replaceChildren(
      h('p', { class: 'notice', role: 'status' }, `New key ${rolled.key_prefix}… made; this tab uses it now. It is shown this once: copy it to where your integration keeps its key. The old key ${rolled.previous.expires_at ? `works until ${rolled.previous.expires_at}` : 'has stopped'}.`),
      copyable('new key', rolled.secret_key, 'new-key'));
  } },
  h('div', { class: 'field' }, h('label', { for: 'key-overlap' }, 'After rolling, the current key'), overlap),
  button);
  show(main, 'API key', current, section('Roll the key', h('p', { class: 'note' }, 'Roll a key you think has leaked, or on schedule. Integrations using the old key need the new one before the old one stops.'), form, notice, shown));
}
