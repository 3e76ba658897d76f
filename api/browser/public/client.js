/*
 * Settle's browser library (CONTRACT §16): `window.Payload`, the JavaScript API existing checkout
 * pages call. Plain browser JavaScript, no dependencies, served by the API at /client.js.
 *
 * Secure inputs (card and account numbers, expiry, card code) are iframes served by the API's own
 * origin; their values never enter this page. A hidden "controller" frame of the same origin
 * gathers them from its sibling frames, sends the request with the client token, and answers this
 * page with the API's response, which holds masked numbers only.
 */
(function () {
  'use strict';

  var script = document.currentScript;
  var API = new URL(script && script.src ? script.src : '/client.js', location.href).origin;
  var PROTOCOL = 'settle-elements-1';
  var READY_TIMEOUT_MS = 20000;

  /** Secure inputs: which payment method they belong to and the error paths that point at them. */
  var SECURE = {
    card: { method: 'card', paths: ['[card][card_number]', '[card][expiry]', '[card][card_code]'] },
    card_number: { method: 'card', paths: ['[card][card_number]'] },
    expiry: { method: 'card', paths: ['[card][expiry]'] },
    expiry_month: { method: 'card', paths: ['[card][expiry_month]', '[card][expiry]'] },
    expiry_year: { method: 'card', paths: ['[card][expiry_year]', '[card][expiry]'] },
    card_code: { method: 'card', paths: ['[card][card_code]'] },
    cvc: { method: 'card', paths: ['[card][card_code]'] },
    account_number: { method: 'bank_account', paths: ['[bank_account][account_number]'] },
    routing_number: { method: 'bank_account', paths: ['[bank_account][routing_number]'] },
  };
  /** Plain inputs that describe the payment method rather than the payment. */
  var METHOD_FIELDS = ['account_holder', 'billing_address', 'email', 'keep_active', 'account_type', 'transfer_type'];

  var current = { token: null };

  function Payload(token) {
    current.token = token;
    return Payload;
  }

  function isObject(value) {
    return value !== null && typeof value === 'object' && !Array.isArray(value);
  }

  function clone(value) {
    return value === undefined ? {} : JSON.parse(JSON.stringify(value));
  }

  function merge(target, source) {
    Object.keys(source || {}).forEach(function (key) {
      if (key === '__proto__' || key === 'constructor' || key === 'prototype') return;
      if (isObject(source[key]) && isObject(target[key])) merge(target[key], source[key]);
      else target[key] = isObject(source[key]) ? merge({}, source[key]) : source[key];
    });
    return target;
  }

  function setPath(target, path, value) {
    var node = target;
    for (var i = 0; i < path.length - 1; i++) {
      if (!isObject(node[path[i]])) node[path[i]] = {};
      node = node[path[i]];
    }
    node[path[path.length - 1]] = value;
  }

  /** `billing_address[postal_code]` → ['billing_address', 'postal_code'] */
  function splitName(name) {
    var parts = [];
    String(name).replace(/^([^\[]+)|\[([^\]]*)\]/g, function (_, head, inner) {
      parts.push(head !== undefined ? head : inner);
      return '';
    });
    return parts;
  }

  /** `{payment_method: {card: {card_number: 'x'}}}` → `{'payment_method[card][card_number]': 'x'}` */
  function flatten(details, prefix, out) {
    out = out || {};
    Object.keys(details || {}).forEach(function (key) {
      var path = prefix ? prefix + '[' + key + ']' : key;
      if (isObject(details[key])) flatten(details[key], path, out);
      else out[path] = details[key];
    });
    return out;
  }

  /** The API may name an inline method's fields at the top (`card[card_number]`): they belong to payment_method. */
  function underPaymentMethod(details) {
    var out = {};
    Object.keys(details).forEach(function (key) {
      if (key !== 'card' && key !== 'bank_account' && METHOD_FIELDS.indexOf(key) === -1) out[key] = details[key];
      else (out.payment_method = out.payment_method || {})[key] = details[key];
    });
    return out;
  }

  function randomId() {
    var bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return ('0' + b.toString(16)).slice(-2); }).join('');
  }

  function PayloadError(data) {
    var error = new Error(data.error_description || data.message || data.error_type || 'Payment failed');
    error.name = 'PayloadError';
    error.data = data;
    return error;
  }

  /**
   * `new Payload.Form({form, payment, payment_method, styles, autosubmit, ...})`: a payment or
   * payment-method form whose `pl-input` elements it wires up.
   */
  function Form(options) {
    if (!(this instanceof Form)) return new Form(options);
    options = options || {};
    var form = options.form || document.querySelector('form[pl-form]');
    if (!form) throw new Error('Payload.Form needs a form: pass {form} or mark one with pl-form="payment"');
    if (!current.token && !options.token) throw new Error('Call Payload(clientToken) before creating a form');
    this.form = form;
    this.token = options.token || current.token;
    this.kind = options.type || form.getAttribute('pl-form') || (options.payment_method && !options.payment ? 'payment_method' : 'payment');
    if (this.kind !== 'payment' && this.kind !== 'payment_method') throw new Error('pl-form must be "payment" or "payment_method"');
    this.params = { payment: clone(options.payment), payment_method: clone(options.payment_method) };
    this.autosubmit = options.autosubmit !== false;
    this.preventSubmitOnEnter = options.preventSubmitOnEnter === true;
    this.invalidClass = (options.styles && options.styles.invalid) || 'pl-invalid';
    this.handlers = {};
    this.sid = randomId();
    this.frames = [];
    this.pending = {};
    this.submitting = null;
    this._onMessage = this._onMessage.bind(this);
    window.addEventListener('message', this._onMessage);
    this._mount();
    var self = this;
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      self.submit().catch(function () { /* reported through the error event */ });
    });
    form.addEventListener('keydown', function (event) {
      if (self.preventSubmitOnEnter && event.key === 'Enter' && event.target && event.target.tagName === 'INPUT') event.preventDefault();
    });
    form.addEventListener('input', function (event) {
      var target = event.target;
      if (target && target.hasAttribute && target.hasAttribute('pl-input')) target.classList.remove(self.invalidClass);
    });
  }

  /** `.on(event, handler)`; chainable. */
  Form.prototype.on = function (name, handler) {
    (this.handlers[name] = this.handlers[name] || []).push(handler);
    return this;
  };

  Form.prototype._emit = function (name, payload) {
    var event = { type: name };
    Object.keys(payload || {}).forEach(function (key) { if (key !== 'type') event[key] = payload[key]; });
    (this.handlers[name] || []).slice().forEach(function (handler) {
      try {
        handler.call(this, event);
      } catch (error) {
        setTimeout(function () { throw error; });
      }
    }, this);
  };

  Form.prototype._frameUrl = function (page, extra) {
    var params = new URLSearchParams(merge({ sid: this.sid, origin: location.origin }, extra || {}));
    return API + '/elements/' + page + '#' + params.toString();
  };

  function labelFor(element) {
    if (element.getAttribute('aria-label')) return element.getAttribute('aria-label');
    if (element.id) {
      var label = document.querySelector('label[for="' + CSS.escape(element.id) + '"]');
      if (label) return label.textContent.trim();
    }
    return '';
  }

  /** What the frame copies from the merchant's element so the input looks like the page's own. */
  function styleOf(element) {
    var style = getComputedStyle(element);
    return JSON.stringify({ color: style.color, fontFamily: style.fontFamily, fontSize: style.fontSize, fontWeight: style.fontWeight, lineHeight: style.lineHeight });
  }

  Form.prototype._mount = function () {
    var self = this;
    var readiness = [];
    Array.prototype.forEach.call(this.form.querySelectorAll('[pl-input]'), function (element) {
      var field = element.getAttribute('pl-input');
      if (!SECURE[field]) return;
      element.classList.add('pl-input', 'pl-input-sec');
      var iframe = document.createElement('iframe');
      iframe.src = self._frameUrl('input', {
        field: field,
        label: labelFor(element),
        placeholder: element.getAttribute('placeholder') || '',
        style: styleOf(element),
        paste: element.hasAttribute('disable-paste') ? 'off' : 'on',
      });
      iframe.title = labelFor(element) || field.replace(/_/g, ' ');
      iframe.setAttribute('frameborder', '0');
      iframe.setAttribute('scrolling', 'no');
      iframe.setAttribute('allowtransparency', 'true');
      iframe.style.cssText = 'border:0;width:100%;height:' + Math.max(element.clientHeight || 0, 24) + 'px;display:block;background:transparent;';
      element.textContent = '';
      element.appendChild(iframe);
      var frame = { field: field, element: element, iframe: iframe };
      readiness.push(new Promise(function (resolve) { frame.ready = resolve; }));
      self.frames.push(frame);
      var label = element.id && document.querySelector('label[for="' + CSS.escape(element.id) + '"]');
      if (label) label.addEventListener('click', function () { self._post(frame, { kind: 'focus' }); });
    });
    var controller = document.createElement('iframe');
    controller.src = this._frameUrl('controller');
    controller.setAttribute('aria-hidden', 'true');
    controller.tabIndex = -1;
    controller.title = 'Payment processing';
    controller.style.cssText = 'position:absolute;width:0;height:0;border:0;visibility:hidden;';
    this.controller = { field: 'controller', element: this.form, iframe: controller };
    readiness.push(new Promise(function (resolve) { self.controller.ready = resolve; }));
    this.form.appendChild(controller);
    this.ready = Promise.all(readiness);
  };

  Form.prototype._post = function (frame, message) {
    if (!frame.iframe.contentWindow) return;
    frame.iframe.contentWindow.postMessage(merge({ protocol: PROTOCOL, sid: this.sid }, message), API);
  };

  Form.prototype._frameOf = function (source) {
    if (this.controller.iframe.contentWindow === source) return this.controller;
    for (var i = 0; i < this.frames.length; i++) if (this.frames[i].iframe.contentWindow === source) return this.frames[i];
    return null;
  };

  Form.prototype._onMessage = function (event) {
    var data = event.data;
    if (event.origin !== API || !isObject(data) || data.protocol !== PROTOCOL || data.sid !== this.sid) return;
    var frame = this._frameOf(event.source);
    if (!frame) return;
    if (data.kind === 'ready') frame.ready();
    else if (data.kind === 'result' && this.pending[data.id]) {
      this.pending[data.id](data);
      delete this.pending[data.id];
    } else if (data.kind === 'resize' && frame !== this.controller && data.height > 0) {
      frame.iframe.style.height = Math.ceil(data.height) + 'px';
    } else if (data.kind === 'enter') {
      if (!this.preventSubmitOnEnter) this.submit().catch(function () {});
    } else if (data.kind === 'event') {
      this._inputEvent(frame, data);
    }
  };

  Form.prototype._inputEvent = function (frame, data) {
    var element = frame.element;
    if (data.name === 'focus') element.classList.add('pl-focus');
    if (data.name === 'blur') element.classList.remove('pl-focus');
    if (data.name === 'valid' || (data.name === 'change' && !data.invalid)) element.classList.remove(this.invalidClass);
    if (data.name === 'invalid') element.classList.add(this.invalidClass);
    var payload = { target: element };
    if (data.name === 'invalid') merge(payload, { message: data.message, invalid: true, live: data.live === true });
    if (data.name === 'valid') payload.live = data.live === true;
    this._emit(data.name, payload);
  };

  /** The request body without the secure values, which the controller frame adds. */
  Form.prototype._body = function () {
    var kind = this.kind;
    var body = kind === 'payment' ? merge({ type: 'payment' }, this.params.payment) : merge({}, this.params.payment_method);
    var method = kind === 'payment' ? (body.payment_method = merge(isObject(body.payment_method) ? body.payment_method : {}, this.params.payment_method)) : body;
    function put(name, value) {
      var path = splitName(name);
      if (path[0] === 'payment_method') path = path.slice(1);
      else if (path[0] === 'account_type') path = ['bank_account', 'account_type'];
      else if (METHOD_FIELDS.indexOf(path[0]) === -1) return setPath(body, path, value);
      if (path.length) setPath(method, path, value);
    }
    Array.prototype.forEach.call(this.form.querySelectorAll('[pl-input]'), function (element) {
      var name = element.getAttribute('pl-input');
      if (SECURE[name] || !('value' in element) || element.disabled) return;
      if ((element.type === 'checkbox' || element.type === 'radio') && !element.checked) return;
      if (element.value === '' && name === 'amount') return;
      put(name, element.value);
    });
    // Plain form fields named with a bracket path ride along (e.g. a hidden payment_method[type]).
    Array.prototype.forEach.call(this.form.elements, function (element) {
      if (!element.name || element.hasAttribute('pl-input') || element.name.indexOf('payment_method[') !== 0 || element.disabled) return;
      if ((element.type === 'checkbox' || element.type === 'radio') && !element.checked) return;
      put(element.name, element.value);
    });
    if (!method.type) {
      var types = this.frames.map(function (frame) { return SECURE[frame.field].method; });
      method.type = types.indexOf('card') !== -1 ? 'card' : types.indexOf('bank_account') !== -1 ? 'bank_account' : undefined;
      if (!method.type) delete method.type;
    }
    return body;
  };

  /** `.submit()`: a Promise of the result, or a rejection whose `data` carries the error. */
  Form.prototype.submit = function () {
    if (this.submitting) return this.submitting;
    var self = this;
    this.submitting = this._submit().then(function (result) {
      self.submitting = null;
      return result;
    }, function (error) {
      self.submitting = null;
      throw error;
    });
    return this.submitting;
  };

  Form.prototype._submit = function () {
    var self = this;
    var timeout = new Promise(function (_, reject) {
      setTimeout(function () { reject(PayloadError({ error_type: 'ServiceUnavailable', error_description: 'The secure inputs did not load' })); }, READY_TIMEOUT_MS);
    });
    return Promise.race([this.ready, timeout]).then(function () {
      self._clearInvalid();
      self._emit('processing', { form: self.kind });
      var id = randomId();
      var answered = new Promise(function (resolve) { self.pending[id] = resolve; });
      self._post(self.controller, {
        kind: 'submit',
        id: id,
        token: self.token,
        form: self.kind,
        body: self._body(),
        fields: self.frames.map(function (frame) { return frame.field; }),
      });
      return answered;
    }).then(function (reply) {
      return reply.status === 200 ? self._succeeded(reply.body) : self._failed(reply.body || {});
    }, function (error) {
      var data = error.data || { error_type: 'ServiceUnavailable', error_description: String(error.message) };
      self._emit('error', data);
      throw PayloadError(data);
    });
  };

  Form.prototype._succeeded = function (object) {
    var result;
    if (this.kind === 'payment') {
      result = { transaction_id: object.id, status: object.status, amount: object.amount };
      var status = isObject(object.status) ? object.status.value : object.status;
      this._emit(status === 'authorized' ? 'authorized' : 'processed', { transaction_id: object.id });
    } else {
      result = { payment_method_id: object.id };
      this._emit('created', { payment_method_id: object.id });
    }
    this._emit('success', result);
    if (this.autosubmit) {
      var name = this.kind === 'payment' ? 'pl_transaction_id' : 'pl_payment_method_id';
      var hidden = this.form.querySelector('input[type=hidden][name="' + name + '"]') || document.createElement('input');
      hidden.type = 'hidden';
      hidden.name = name;
      hidden.value = object.id;
      this.form.appendChild(hidden);
      // Our own frames leave the page with it; a native submit sends no submit event back to us.
      HTMLFormElement.prototype.submit.call(this.form);
    }
    return result;
  };

  Form.prototype._failed = function (body) {
    var data = {
      error_type: body.error_type || 'ServiceUnavailable',
      error_description: body.error_description || 'The request failed',
      message: body.error_description || 'The request failed',
    };
    if (body.error_type === 'TransactionDeclined' && isObject(body.details)) {
      var declined = body.details;
      data.details = declined;
      this._emit('declined', {
        transaction_id: declined.id,
        message: declined.status_message || body.error_description,
        error_type: body.error_type,
        error_description: body.error_description,
        status_code: declined.status_code,
      });
    } else if (isObject(body.details)) {
      data.details = flatten(this.kind === 'payment_method' ? { payment_method: body.details } : underPaymentMethod(body.details));
      this._markInvalid(data.details);
    }
    this._emit('error', data);
    throw PayloadError(data);
  };

  Form.prototype._markInvalid = function (details) {
    var self = this;
    Object.keys(details).forEach(function (path) {
      var targets = [];
      self.frames.forEach(function (frame) {
        if (SECURE[frame.field].paths.some(function (p) { return path === 'payment_method' + p; })) targets.push(frame.element);
      });
      Array.prototype.forEach.call(self.form.querySelectorAll('[pl-input]'), function (element) {
        var name = element.getAttribute('pl-input');
        if (SECURE[name]) return;
        var parts = splitName(name);
        if (parts[0] === 'account_type') parts = ['payment_method', 'bank_account', 'account_type'];
        else if (parts[0] !== 'payment_method' && METHOD_FIELDS.indexOf(parts[0]) !== -1) parts.unshift('payment_method');
        var bracket = parts[0] + parts.slice(1).map(function (p) { return '[' + p + ']'; }).join('');
        if (bracket === path) targets.push(element);
      });
      targets.forEach(function (element) {
        element.classList.add(self.invalidClass);
        self._emit('invalid', { target: element, message: details[path], invalid: true, live: false });
      });
    });
  };

  Form.prototype._clearInvalid = function () {
    var invalid = this.invalidClass;
    Array.prototype.forEach.call(this.form.querySelectorAll('[pl-input]'), function (element) { element.classList.remove(invalid); });
  };

  /**
   * What Payload.Checkout and Payload.ProcessingAccount share: a page of Settle's in a frame,
   * inside `container` or, without one, in a modal dialog, reporting to this page by postMessage
   * (origin, frame and session checked).
   */
  function openHosted(self, options, path, title) {
    self.token = options.token || current.token;
    if (!self.token) throw new Error('Call Payload(clientToken) before opening ' + title.toLowerCase());
    self.form = options.form || null;
    self.title = title;
    self.handlers = {};
    self.sid = randomId();
    var iframe = document.createElement('iframe');
    iframe.src = API + path + encodeURIComponent(self.token) + '#' + new URLSearchParams({ sid: self.sid, origin: location.origin }).toString();
    iframe.title = title;
    iframe.style.cssText = 'border:0;width:100%;height:100%;min-height:640px;display:block;background:#fff;';
    self.iframe = iframe;
    if (options.container) options.container.appendChild(iframe);
    else self.modal = openModal(self, iframe);
    self._onMessage = self._onMessage.bind(self);
    window.addEventListener('message', self._onMessage);
  }

  function openModal(self, iframe) {
    var overlay = document.createElement('div');
    overlay.setAttribute('role', 'dialog');
    overlay.setAttribute('aria-modal', 'true');
    overlay.setAttribute('aria-label', self.title);
    overlay.style.cssText = 'position:fixed;inset:0;z-index:2147483647;background:rgba(0,0,0,0.55);display:flex;align-items:flex-start;justify-content:center;overflow:auto;';
    var box = document.createElement('div');
    box.style.cssText = 'position:relative;width:100%;max-width:30rem;margin:2rem 0.5rem;background:#fff;border-radius:8px;overflow:hidden;';
    var close = document.createElement('button');
    close.type = 'button';
    close.textContent = 'Close';
    close.style.cssText = 'display:block;margin:0.5rem 0.5rem 0 auto;font:inherit;padding:0.4rem 0.8rem;';
    close.addEventListener('click', function () { self.close(); });
    overlay.addEventListener('keydown', function (event) { if (event.key === 'Escape') self.close(); });
    box.appendChild(close);
    box.appendChild(iframe);
    overlay.appendChild(box);
    document.body.appendChild(overlay);
    close.focus();
    return overlay;
  }

  var hosted = {
    on: Form.prototype.on,
    _emit: Form.prototype._emit,
    /** Closes the modal (or removes the frame) and fires `closed`. */
    close: function () {
      window.removeEventListener('message', this._onMessage);
      var node = this.modal || this.iframe;
      if (node.parentNode) node.parentNode.removeChild(node);
      this._emit('closed', {});
    },
    /** The frame's message, or null when it is not from this frame's session. */
    _fromFrame: function (event) {
      var data = event.data;
      if (event.origin !== API || event.source !== this.iframe.contentWindow || !isObject(data) || data.protocol !== PROTOCOL || data.sid !== this.sid) return null;
      return data;
    },
    /** With a `form`, posts it natively carrying the new object's id in a hidden input. */
    _submitForm: function (name, id) {
      if (!this.form) return;
      var hidden = this.form.querySelector('input[type=hidden][name="' + name + '"]') || document.createElement('input');
      hidden.type = 'hidden';
      hidden.name = name;
      hidden.value = id;
      this.form.appendChild(hidden);
      HTMLFormElement.prototype.submit.call(this.form);
    },
  };

  function mixHosted(Constructor) {
    Object.keys(hosted).forEach(function (key) { Constructor.prototype[key] = hosted[key]; });
  }

  /**
   * `new Payload.Checkout({container, form, autosubmit})` with a checkout_plugin token: Settle's
   * payment form in a frame, inside `container` or, without one, in a modal dialog.
   */
  function Checkout(options) {
    if (!(this instanceof Checkout)) return new Checkout(options);
    options = options || {};
    this.autosubmit = options.autosubmit !== false;
    openHosted(this, options, '/elements/checkout/', 'Checkout');
  }
  mixHosted(Checkout);

  Checkout.prototype._onMessage = function (event) {
    var data = this._fromFrame(event);
    if (!data) return;
    if (data.kind === 'ready') return this._emit('loaded', {});
    if (data.kind !== 'result' || !isObject(data.body)) return;
    var body = data.body;
    if (data.status !== 200) {
      var details = isObject(body.details) ? body.details : {};
      return this._emit('declined', { transaction_id: details.id, message: details.status_message || body.error_description, error_type: body.error_type, status_code: details.status_code });
    }
    var status = isObject(body.status) ? body.status.value : body.status;
    this._emit(status === 'authorized' ? 'authorized' : 'processed', { transaction_id: body.id });
    this._emit('success', { transaction_id: body.id, status: status, amount: body.amount });
    if (this.autosubmit) this._submitForm('pl_transaction_id', body.id);
  };

  /**
   * `new Payload.ProcessingAccount({container, form})` with a processing_account_plugin token:
   * Settle's onboarding form in a frame (or a modal). Events: `loaded`, `account_created` and
   * `success` (both `{account: {id}}`), `closed`. With a `form`, it is posted with a hidden
   * `pl_account_id` once the account exists.
   */
  function ProcessingAccount(options) {
    if (!(this instanceof ProcessingAccount)) return new ProcessingAccount(options);
    openHosted(this, options || {}, '/elements/processing-account/', 'Processing account');
  }
  mixHosted(ProcessingAccount);

  ProcessingAccount.prototype._onMessage = function (event) {
    var data = this._fromFrame(event);
    if (!data) return;
    // The frame's form posts back to itself: the merchant hears `loaded` for the first page only.
    if (data.kind === 'ready' && !this.loaded) {
      this.loaded = true;
      return this._emit('loaded', {});
    }
    if (data.kind !== 'result' || data.status !== 200 || !isObject(data.body) || typeof data.body.id !== 'string' || this.account) return;
    this.account = { id: data.body.id };
    this._emit('account_created', { account: { id: data.body.id } });
    this._emit('success', { account: { id: data.body.id } });
    this._submitForm('pl_account_id', data.body.id);
  };

  Payload.Form = Form;
  Payload.Checkout = Checkout;
  Payload.ProcessingAccount = ProcessingAccount;
  Payload.version = '1';
  window.Payload = Payload;
})();
