/*
 * The hosted checkout page (/checkout/<client token>): pays through the API with the token in the
 * page's own address, shows each error under its input, then goes to the merchant's completed_url
 * with ?pl_transaction_id=… (or shows the receipt when there is none). The payment link page
 * (/pay/<id>) is the same page with its token and link id in data attributes.
 */
(function () {
  'use strict';

  var form = document.getElementById('checkout');
  if (!form) return;
  // A checkout page's address is its token; a payment link page carries the token it was given.
  var token = form.getAttribute('data-token') || decodeURIComponent(location.pathname.split('/').pop() || '');
  var paymentLinkId = form.getAttribute('data-payment-link-id');
  // Inside Payload.Checkout's frame the merchant page hears the outcome (origin-checked there).
  var embedded = form.getAttribute('data-embedded') === 'true';
  var frameParams = new URLSearchParams(location.hash.slice(1));

  function toMerchant(message) {
    var sid = frameParams.get('sid');
    var origin = frameParams.get('origin');
    if (!embedded || !sid || !origin || window.parent === window) return;
    message.protocol = 'settle-elements-1';
    message.sid = sid;
    window.parent.postMessage(message, origin);
  }
  var button = document.getElementById('pay');
  var buttonText = button.textContent;

  /** API error paths (bracketed) → the input that shows them. */
  var INPUTS = {
    amount: 'amount',
    'payment_method[card][card_number]': 'card_number',
    'payment_method[card][expiry]': 'expiry',
    'payment_method[card][card_code]': 'card_code',
    'payment_method[bank_account][account_number]': 'account_number',
    'payment_method[bank_account][routing_number]': 'routing_number',
    'payment_method[bank_account][account_type]': 'account_type',
    'payment_method[account_holder]': 'account_holder',
    'payment_method[billing_address][street_address]': 'street_address',
    'payment_method[billing_address][city]': 'city',
    'payment_method[billing_address][state_province]': 'state_province',
    'payment_method[billing_address][postal_code]': 'postal_code',
  };

  var METHOD_KEYS = ['card', 'bank_account', 'account_holder', 'billing_address'];

  function value(id) {
    var element = document.getElementById(id);
    return element ? element.value.trim() : '';
  }

  function method() {
    var checked = form.querySelector('input[name=method]:checked') || form.querySelector('input[name=method]');
    return checked ? checked.value : 'card';
  }

  function showMethod() {
    var card = document.getElementById('card-fields');
    var bank = document.getElementById('bank-fields');
    if (card) card.hidden = method() !== 'card';
    if (bank) bank.hidden = method() !== 'bank_account';
    var holder = document.querySelector('label[for=account_holder]');
    if (holder) holder.textContent = method() === 'card' ? 'Name on card' : 'Account holder name';
  }

  function flatten(details, prefix, out) {
    Object.keys(details || {}).forEach(function (key) {
      var path = prefix ? prefix + '[' + key + ']' : key;
      var item = details[key];
      if (item !== null && typeof item === 'object') flatten(item, path, out);
      else out[path] = String(item);
    });
    return out;
  }

  /** The API may name an inline method's fields at the top (`card[card_number]`): they belong to payment_method. */
  function underPaymentMethod(details) {
    var out = {};
    Object.keys(details).forEach(function (key) {
      if (METHOD_KEYS.indexOf(key) === -1) out[key] = details[key];
      else (out.payment_method = out.payment_method || {})[key] = details[key];
    });
    return out;
  }

  function clearErrors() {
    Array.prototype.forEach.call(form.querySelectorAll('.error'), function (element) {
      element.hidden = true;
      element.textContent = '';
    });
    Array.prototype.forEach.call(form.querySelectorAll('[aria-invalid]'), function (element) { element.removeAttribute('aria-invalid'); });
  }

  function showError(id, message) {
    var input = document.getElementById(id);
    var text = document.getElementById(id + '-error');
    if (!input || !text) return false;
    input.setAttribute('aria-invalid', 'true');
    text.textContent = message;
    text.hidden = false;
    return true;
  }

  function showFormError(message) {
    var text = document.getElementById('form-error');
    text.textContent = message;
    text.hidden = false;
  }

  var KINDS = window.SettleInputs.KINDS;
  var SECURE_IDS = ['card_number', 'expiry', 'card_code', 'routing_number', 'account_number'];

  /** The value the API is sent for an input: a secure kind's clean form, otherwise trimmed. */
  function cleaned(id) {
    return KINDS[id] ? KINDS[id].clean(value(id)) : value(id);
  }

  /** Checks the browser can make before asking the server; the server checks everything again. */
  function localErrors(kind) {
    var errors = {};
    var required = kind === 'card' ? ['card_number', 'expiry', 'card_code'] : ['routing_number', 'account_number'];
    if (document.getElementById('postal_code')) required.push('postal_code');
    if (document.getElementById('amount')) required.push('amount');
    required.forEach(function (id) {
      if (!value(id)) errors[id] = 'Required';
      else if (KINDS[id] && KINDS[id].check(value(id))) errors[id] = KINDS[id].check(value(id));
    });
    return errors;
  }

  function clearError(id) {
    var input = document.getElementById(id);
    var text = document.getElementById(id + '-error');
    if (input) input.removeAttribute('aria-invalid');
    if (text) {
      text.hidden = true;
      text.textContent = '';
    }
  }

  /** Typing clears a field's error; leaving a filled field tells what is wrong with it, in words. */
  SECURE_IDS.forEach(function (id) {
    var input = document.getElementById(id);
    if (!input) return;
    window.SettleInputs.attach(input, id, function () { clearError(id); });
    input.addEventListener('blur', function () {
      if (!value(id)) return;
      var problem = KINDS[id].check(value(id));
      if (problem) showError(id, problem);
      else clearError(id);
    });
  });

  function body(kind) {
    var paymentMethod = { type: kind };
    if (kind === 'card') paymentMethod.card = { card_number: cleaned('card_number'), expiry: cleaned('expiry'), card_code: cleaned('card_code') };
    else paymentMethod.bank_account = { account_number: cleaned('account_number'), routing_number: cleaned('routing_number'), account_type: value('account_type') || 'checking' };
    if (value('account_holder')) paymentMethod.account_holder = value('account_holder');
    if (document.getElementById('postal_code')) {
      var address = {};
      ['street_address', 'city', 'state_province', 'postal_code'].forEach(function (id) { if (value(id)) address[id] = value(id); });
      paymentMethod.billing_address = address;
    }
    var payment = { type: 'payment', payment_method: paymentMethod };
    if (paymentLinkId) payment.payment_link_id = paymentLinkId;
    if (document.getElementById('amount')) payment.amount = value('amount');
    return payment;
  }

  function focusFirstInvalid() {
    var first = form.querySelector('[aria-invalid=true]');
    if (first) first.focus();
  }

  function completed(transaction) {
    toMerchant({ kind: 'result', status: 200, body: { id: transaction.id, status: transaction.status, amount: transaction.amount } });
    var target = form.getAttribute('data-completed-url');
    if (target) {
      var url = new URL(target);
      url.searchParams.set('pl_transaction_id', transaction.id);
      location.assign(url.href);
      return;
    }
    form.hidden = true;
    document.getElementById('reference').textContent = transaction.id;
    var done = document.getElementById('done');
    done.hidden = false;
    done.focus();
  }

  function failed(status, answer) {
    if (answer.error_type === 'TransactionDeclined') {
      var declined = answer.details || {};
      toMerchant({ kind: 'result', status: status, body: { error_type: answer.error_type, error_description: answer.error_description, details: { id: declined.id, status_code: declined.status_code, status_message: declined.status_message } } });
      var reason = answer.details && answer.details.status_message ? ' (' + answer.details.status_message + ')' : '';
      showFormError('The payment was declined' + reason + '. This checkout link has been used; ask the merchant for a new one to try another method.');
      return;
    }
    if (status === 401 || status === 403) {
      showFormError('This checkout link has expired or was already used. Ask the merchant for a new one.');
      return;
    }
    var details = flatten(underPaymentMethod(answer.details || {}), '', {});
    var unplaced = [];
    Object.keys(details).forEach(function (path) {
      if (!showError(INPUTS[path] || '', details[path])) unplaced.push(path + ': ' + details[path]);
    });
    showFormError(unplaced.length ? 'Please check: ' + unplaced.join('; ') : 'Please correct the fields marked below.');
    focusFirstInvalid();
  }

  Array.prototype.forEach.call(form.querySelectorAll('input[name=method]'), function (radio) { radio.addEventListener('change', showMethod); });
  showMethod();
  toMerchant({ kind: 'ready' });

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    if (button.disabled) return;
    clearErrors();
    var kind = method();
    var errors = localErrors(kind);
    if (Object.keys(errors).length) {
      Object.keys(errors).forEach(function (id) { showError(id, errors[id]); });
      showFormError('Please correct the fields marked below.');
      focusFirstInvalid();
      return;
    }
    button.disabled = true;
    button.textContent = 'Paying…';
    fetch('/transactions', {
      method: 'POST',
      headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json' },
      body: JSON.stringify(body(kind)),
      credentials: 'omit',
    }).then(function (response) {
      return response.json().then(function (answer) { return { status: response.status, answer: answer }; });
    }).then(function (result) {
      if (result.status === 200) return completed(result.answer);
      button.disabled = false;
      button.textContent = buttonText;
      failed(result.status, result.answer || {});
    }).catch(function () {
      button.disabled = false;
      button.textContent = buttonText;
      showFormError('Could not reach the payment server. Check your connection and try again.');
    });
  });
})();
