/*
 * Payload.ProcessingAccount's frame (/elements/processing-account/<client token>): tells the
 * merchant page that opened it (the origin and session id in the address's #fragment, carried
 * through the form post as hidden inputs) that it loaded and, once the server has opened the
 * processing account, the account's id. The form itself is a plain post; this only reports.
 */
(function () {
  'use strict';

  var root = document.getElementById('plugin');
  if (!root) return;
  var fragment = new URLSearchParams(location.hash.slice(1));
  var sid = root.getAttribute('data-sid') || fragment.get('sid') || '';
  var origin = root.getAttribute('data-origin') || fragment.get('origin') || '';
  var form = root.querySelector('form');

  function toMerchant(message) {
    if (!sid || !origin || window.parent === window) return;
    message.protocol = 'settle-elements-1';
    message.sid = sid;
    window.parent.postMessage(message, origin);
  }

  if (form) {
    if (form.elements.sid) form.elements.sid.value = sid;
    if (form.elements.origin) form.elements.origin.value = origin;
    var first = form.querySelector('[aria-invalid=true]');
    if (first) first.focus();
    form.addEventListener('submit', function () {
      var button = form.querySelector('button[type=submit]');
      // A second click would post the spent token again; the server refuses it, but say what is happening.
      setTimeout(function () {
        button.disabled = true;
        button.textContent = 'Creating account…';
      });
    });
  }
  toMerchant({ kind: 'ready' });
  var accountId = root.getAttribute('data-account-id');
  if (accountId) {
    var heading = root.querySelector('h1');
    if (heading) heading.focus();
    toMerchant({ kind: 'result', status: 200, body: { id: accountId } });
  }
})();
