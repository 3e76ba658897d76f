/*
 * The secure-input and controller frames of Payload.Form (served from the API's origin).
 *
 * /elements/input      one secure input (or the three of `card`); answers its value only to a
 *                      frame of this same origin (the controller), never to the merchant page.
 * /elements/controller gathers the values from its sibling input frames, adds them to the body the
 *                      merchant page sent, calls the API with the client token and posts the
 *                      API's answer (masked numbers only) back to the page.
 *
 * Parameters arrive in the URL fragment (never sent to a server): sid (the form's session),
 * origin (the merchant page's origin), field, label, placeholder, style, paste.
 */
(function () {
  'use strict';

  var PROTOCOL = 'settle-elements-1';
  var COLLECT_TIMEOUT_MS = 5000;
  var params = new URLSearchParams(location.hash.slice(1));
  var sid = params.get('sid') || '';
  var parentOrigin = params.get('origin') || '';
  if (!sid || !parentOrigin || window.parent === window) return;

  function toParent(message) {
    message.protocol = PROTOCOL;
    message.sid = sid;
    window.parent.postMessage(message, parentOrigin);
  }

  function fromParent(event) {
    return event.source === window.parent && event.origin === parentOrigin && isOurs(event.data);
  }

  function isOurs(data) {
    return data !== null && typeof data === 'object' && data.protocol === PROTOCOL && data.sid === sid;
  }

  var KINDS = window.SettleInputs.KINDS;

  /**
   * Each secure field: its label, autocomplete token (so the browser's autofill finds it), where it
   * goes in a payment method, and its kind in SettleInputs (format, clean, check).
   */
  var FIELDS = {
    card_number: { label: 'Card number', autocomplete: 'cc-number', path: ['card', 'card_number'], placeholder: '1234 1234 1234 1234' },
    expiry: { label: 'Expiration date', autocomplete: 'cc-exp', path: ['card', 'expiry'], placeholder: 'MM/YY' },
    expiry_month: { label: 'Expiration month', autocomplete: 'cc-exp-month', path: ['card', 'expiry_month'], placeholder: 'MM' },
    expiry_year: { label: 'Expiration year', autocomplete: 'cc-exp-year', path: ['card', 'expiry_year'], placeholder: 'YY' },
    card_code: { label: 'Security code', autocomplete: 'cc-csc', path: ['card', 'card_code'], placeholder: 'CVC' },
    account_number: { label: 'Account number', autocomplete: 'off', path: ['bank_account', 'account_number'] },
    routing_number: { label: 'Routing number', autocomplete: 'off', path: ['bank_account', 'routing_number'] },
  };
  Object.keys(FIELDS).forEach(function (name) { FIELDS[name].kind = name; });
  FIELDS.cvc = FIELDS.card_code;
  /** The only places a secure value is put: where the API reads a payment method's numbers. */
  var SECURE_PATHS = ['card.card_number', 'card.expiry', 'card.expiry_month', 'card.expiry_year', 'card.card_code', 'bank_account.account_number', 'bank_account.routing_number'];
  var GROUPS = { card: ['card_number', 'expiry', 'card_code'] };

  if (location.pathname === '/elements/controller') startController();
  else startInput(params.get('field') || '');

  function startInput(field) {
    var names = GROUPS[field] || (FIELDS[field] ? [field] : []);
    if (!names.length) return;
    var inputs = names.map(function (name, i) { return buildInput(name, field, names.length > 1, i); });
    if (names.length > 1) document.body.classList.add('group');

    window.addEventListener('message', function (event) {
      if (fromParent(event) && event.data.kind === 'focus') inputs[0].element.focus();
      // Values are answered only to a frame of this origin: the controller, never the page.
      if (event.origin === location.origin && isOurs(event.data) && event.data.kind === 'collect' && event.source) {
        var values = {};
        var errors = {};
        inputs.forEach(function (input) {
          var raw = input.element.value;
          var problem = raw.trim() === '' ? 'Required' : input.kind.check(raw);
          if (problem) errors[input.spec.path.join('.')] = problem;
          else values[input.spec.path.join('.')] = input.kind.clean(raw);
          if (problem) input.element.setAttribute('aria-invalid', 'true');
        });
        event.source.postMessage({ protocol: PROTOCOL, sid: sid, kind: 'values', id: event.data.id, field: field, values: values, errors: errors }, location.origin);
      }
    });
    toParent({ kind: 'resize', height: document.documentElement.scrollHeight });
    toParent({ kind: 'ready', field: field });
  }

  function buildInput(name, field, grouped, index) {
    var spec = FIELDS[name];
    var kind = KINDS[spec.kind];
    var element = document.createElement('input');
    element.type = 'text';
    element.id = 'pl-' + name;
    element.name = name;
    element.autocomplete = spec.autocomplete;
    element.setAttribute('inputmode', 'numeric');
    element.setAttribute('aria-label', (!grouped && params.get('label')) || spec.label);
    element.setAttribute('spellcheck', 'false');
    element.setAttribute('autocorrect', 'off');
    element.placeholder = (!grouped && params.get('placeholder')) || spec.placeholder || '';
    applyStyle(element);
    document.body.appendChild(element);
    var live = false;

    function report(name, extra) {
      var message = { kind: 'event', name: name, field: field };
      Object.keys(extra || {}).forEach(function (k) { message[k] = extra[k]; });
      toParent(message);
    }
    element.addEventListener('focus', function () { report('focus'); });
    // A problem is told only once the person leaves the field (or presses Pay), never mid-typing.
    element.addEventListener('blur', function () {
      report('blur');
      if (element.value.trim() === '') return;
      var problem = kind.check(element.value);
      element.setAttribute('aria-invalid', problem ? 'true' : 'false');
      report(problem ? 'invalid' : 'valid', { message: problem || undefined, live: false });
    });
    window.SettleInputs.attach(element, spec.kind, function () {
      var problem = element.value.trim() === '' ? 'Required' : kind.check(element.value);
      element.removeAttribute('aria-invalid');
      report('change', { invalid: Boolean(problem), empty: element.value.trim() === '' });
      if (!problem && !live) report('valid', { live: true });
      live = !problem;
    });
    element.addEventListener('keydown', function (event) {
      if (event.key === 'Enter') {
        event.preventDefault();
        toParent({ kind: 'enter', field: field });
      }
    });
    if (params.get('paste') === 'off') element.addEventListener('paste', function (event) { event.preventDefault(); });
    return { element: element, spec: spec, kind: kind, index: index };
  }

  function applyStyle(element) {
    var style = {};
    try {
      style = JSON.parse(params.get('style') || '{}');
    } catch (error) {
      style = {};
    }
    ['color', 'fontFamily', 'fontSize', 'fontWeight', 'lineHeight'].forEach(function (key) {
      if (typeof style[key] === 'string' && style[key].length < 200) element.style[key] = style[key];
    });
  }

  function startController() {
    var busy = false;
    window.addEventListener('message', function (event) {
      if (!fromParent(event) || event.data.kind !== 'submit' || busy) return;
      busy = true;
      var request = event.data;
      pay(request).then(function (answer) {
        busy = false;
        toParent({ kind: 'result', id: request.id, status: answer.status, body: answer.body });
      });
    });
    toParent({ kind: 'ready', field: 'controller' });
  }

  /** Asks every sibling frame of this origin for its values; resolves once each expected field answered. */
  function collect(fields) {
    var id = String(Math.random()).slice(2) + Date.now();
    return new Promise(function (resolve) {
      var answers = {};
      var missing = fields.slice();
      function done() {
        window.removeEventListener('message', onAnswer);
        clearTimeout(timer);
        resolve({ answers: answers, missing: missing });
      }
      function onAnswer(event) {
        var data = event.data;
        if (event.origin !== location.origin || !isOurs(data) || data.kind !== 'values' || data.id !== id) return;
        var at = missing.indexOf(data.field);
        if (at === -1) return;
        missing.splice(at, 1);
        answers[data.field] = data;
        if (!missing.length) done();
      }
      var timer = setTimeout(done, COLLECT_TIMEOUT_MS);
      window.addEventListener('message', onAnswer);
      if (!missing.length) return done();
      for (var i = 0; i < window.parent.frames.length; i++) {
        try {
          window.parent.frames[i].postMessage({ protocol: PROTOCOL, sid: sid, kind: 'collect', id: id }, location.origin);
        } catch (error) {
          // a frame that went away while we asked
        }
      }
    });
  }

  function setPath(target, path, value) {
    var node = target;
    for (var i = 0; i < path.length - 1; i++) {
      if (node[path[i]] === null || typeof node[path[i]] !== 'object' || Array.isArray(node[path[i]])) node[path[i]] = {};
      node = node[path[i]];
    }
    node[path[path.length - 1]] = value;
  }

  /** Split month and year inputs (`cc-exp-month`, `cc-exp-year`) reach the API as one `expiry`. */
  function joinSplitExpiry(body, prefix) {
    var node = body;
    prefix.forEach(function (key) { node = node && node[key]; });
    var card = node && node.card;
    if (!card || card.expiry_month === undefined || card.expiry_year === undefined) return;
    card.expiry = window.SettleInputs.joinExpiry(card.expiry_month, card.expiry_year);
    delete card.expiry_month;
    delete card.expiry_year;
  }

  function invalid(details, paths) {
    return { status: 400, body: { object: 'error', error_type: 'InvalidAttributes', error_description: paths.join(', '), details: details } };
  }

  function pay(request) {
    var form = request.form === 'payment_method' ? 'payment_method' : 'payment';
    var body = request.body !== null && typeof request.body === 'object' ? request.body : {};
    var fields = Array.isArray(request.fields) ? request.fields.filter(function (f) { return typeof f === 'string'; }) : [];
    // The secure values go only where the API reads payment method numbers: the page cannot
    // choose a field that would be echoed back to it.
    var prefix = form === 'payment' ? ['payment_method'] : [];
    return collect(fields).then(function (gathered) {
      var details = {};
      var paths = [];
      if (gathered.missing.length) return { status: 503, body: { object: 'error', error_type: 'ServiceUnavailable', error_description: 'A secure input did not answer', details: {} } };
      Object.keys(gathered.answers).forEach(function (field) {
        var answer = gathered.answers[field];
        Object.keys(answer.errors || {}).forEach(function (path) {
          var full = prefix.concat(path.split('.'));
          setPath(details, full, String(answer.errors[path]));
          paths.push(full[0] + full.slice(1).map(function (p) { return '[' + p + ']'; }).join(''));
        });
        Object.keys(answer.values || {}).forEach(function (path) {
          if (SECURE_PATHS.indexOf(path) === -1) return;
          setPath(body, prefix.concat(path.split('.')), String(answer.values[path]));
        });
      });
      if (paths.length) return invalid(details, paths);
      joinSplitExpiry(body, prefix);
      return fetch(form === 'payment' ? '/transactions' : '/payment_methods', {
        method: 'POST',
        headers: { Authorization: 'Bearer ' + String(request.token), 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
        credentials: 'omit',
      }).then(function (response) {
        return response.json().then(function (json) { return { status: response.status, body: json }; }, function () {
          return { status: response.status, body: { object: 'error', error_type: 'ServiceUnavailable', error_description: 'Unexpected answer from the server' } };
        });
      }, function () {
        return { status: 503, body: { object: 'error', error_type: 'ServiceUnavailable', error_description: 'Could not reach the payment server' } };
      });
    });
  }
})();
