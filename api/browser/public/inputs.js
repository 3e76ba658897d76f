/*
 * How card and bank inputs take what people type, paste and autofill: shared by the secure-input
 * frames (element.js) and the hosted pages (checkout.js), loaded before either as
 * `window.SettleInputs`.
 *
 * Each kind has a `format` (what the field shows while someone types: digits grouped, the "/" of an
 * expiry added), a `clean` (the value the API is sent) and a `check` (a sentence for a person, or
 * null). `attach` wires an <input> so that typing in the middle keeps the caret where it was, and
 * Backspace over a separator the field inserted deletes the digit before it.
 */
(function (root) {
  'use strict';

  function digitsOf(value) {
    return String(value).replace(/\D/g, '');
  }

  function luhnValid(number) {
    var sum = 0;
    for (var i = 0; i < number.length; i++) {
      var d = Number(number[number.length - 1 - i]);
      if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
      sum += d;
    }
    return sum % 10 === 0;
  }

  function abaValid(number) {
    if (!/^\d{9}$/.test(number)) return false;
    var weights = [3, 7, 1];
    var sum = 0;
    for (var i = 0; i < 9; i++) sum += Number(number[i]) * weights[i % 3];
    return sum % 10 === 0;
  }

  /** American Express numbers (34, 37) are grouped 4-6-5; every other card 4-4-4-4-3. */
  function cardGroups(digits) {
    return /^3[47]/.test(digits) ? [4, 6, 5] : [4, 4, 4, 4, 3];
  }

  function groupDigits(digits) {
    var parts = [];
    var at = 0;
    cardGroups(digits).forEach(function (size) {
      if (at < digits.length) parts.push(digits.slice(at, at + size));
      at += size;
    });
    return parts.join(' ');
  }

  var MAX_CARD_DIGITS = 19;

  /**
   * An expiry as a person may write it: `1235`, `12/35`, `12 / 35`, `12/2035`, `1/35`, `0135`,
   * `122035`. Returns {month, year} (year in four digits) or null.
   */
  function parseExpiry(value) {
    var text = String(value).trim();
    var m = /^(\d{1,2})\s*[/\-.]\s*(\d{2}|\d{4})$/.exec(text);
    if (!m) m = /^(\d{2})(\d{2}|\d{4})$/.exec(text.replace(/\s/g, ''));
    if (!m) return null;
    var month = Number(m[1]);
    if (month < 1 || month > 12) return null;
    return { month: month, year: m[2].length === 2 ? 2000 + Number(m[2]) : Number(m[2]) };
  }

  function twoDigits(n) {
    return ('0' + n).slice(-2);
  }

  function cleanExpiry(value) {
    var parsed = parseExpiry(value);
    return parsed ? twoDigits(parsed.month) + '/' + twoDigits(parsed.year % 100) : String(value).trim();
  }

  /**
   * What an expiry field shows after an edit. `typedSlashEnd` is true when the caret sits after a
   * "/" (the person just typed or pasted it), so a single month digit becomes `01/`; `deleting`
   * keeps the field from adding a "/" back that the person just removed.
   */
  function formatExpiry(value, deleting, typedSlashEnd) {
    var raw = String(value);
    var slash = raw.search(/[/\-.]/);
    var month;
    var year;
    var withSlash;
    if (slash !== -1) {
      month = digitsOf(raw.slice(0, slash));
      year = digitsOf(raw.slice(slash + 1));
      if (month.length > 2) {
        year = month.slice(2) + year;
        month = month.slice(0, 2);
      }
      if (month.length === 1 && !deleting && typedSlashEnd) month = '0' + month;
      withSlash = month.length > 0;
    } else {
      var digits = digitsOf(raw);
      if (digits === '') return '';
      // A first digit of 2 to 9 can only be a month of one digit; so can 13 to 19.
      if (/^[2-9]/.test(digits) || (/^1[3-9]/.test(digits) && !deleting)) {
        month = '0' + digits[0];
        year = digits.slice(1);
      } else {
        month = digits.slice(0, 2);
        year = digits.slice(2);
      }
      withSlash = month.length === 2 && (year.length > 0 || !deleting);
    }
    return month + (withSlash ? '/' : '') + year.slice(0, 4);
  }

  var KINDS = {
    card_number: {
      format: function (value) { return groupDigits(digitsOf(value).slice(0, MAX_CARD_DIGITS)); },
      clean: function (value) { return digitsOf(value); },
      check: function (value) {
        var digits = digitsOf(value);
        if (/[^\d\s-]/.test(value)) return 'A card number has only digits';
        if (digits.length < 12) return 'This card number is too short';
        // The sandbox's decline numbers (4111 1111 1111 99NN) go through for the API to decline.
        if (!luhnValid(digits) && !/^41111111111199\d\d$/.test(digits)) return 'This card number is not valid: check each digit';
        return null;
      },
    },
    expiry: {
      format: formatExpiry,
      clean: cleanExpiry,
      check: function (value, now) {
        var parsed = parseExpiry(value);
        if (!parsed) return 'Enter the expiration date as MM/YY';
        var today = now || new Date();
        if (parsed.year * 12 + parsed.month < today.getUTCFullYear() * 12 + today.getUTCMonth() + 1) return 'This card has expired';
        return null;
      },
    },
    expiry_month: {
      format: function (value) { return digitsOf(value).slice(0, 2); },
      clean: function (value) { return twoDigits(Number(digitsOf(value))); },
      check: function (value) {
        var month = Number(digitsOf(value));
        return digitsOf(value).length > 0 && month >= 1 && month <= 12 ? null : 'Enter the month as 1 to 12';
      },
    },
    expiry_year: {
      format: function (value) { return digitsOf(value).slice(0, 4); },
      clean: function (value) { return twoDigits(Number(digitsOf(value)) % 100); },
      check: function (value) {
        return /^(\d{2}|\d{4})$/.test(digitsOf(value)) ? null : 'Enter the year as YY or YYYY';
      },
    },
    card_code: {
      format: function (value) { return digitsOf(value).slice(0, 4); },
      clean: function (value) { return digitsOf(value); },
      check: function (value) { return /^\d{3,4}$/.test(digitsOf(value)) ? null : 'The security code is 3 or 4 digits'; },
    },
    routing_number: {
      format: function (value) { return digitsOf(value).slice(0, 9); },
      clean: function (value) { return digitsOf(value); },
      check: function (value) {
        var digits = digitsOf(value);
        if (digits.length !== 9) return 'A routing number is 9 digits';
        return abaValid(digits) ? null : 'This routing number is not valid: check each digit';
      },
    },
    account_number: {
      format: function (value) { return digitsOf(value).slice(0, 17); },
      clean: function (value) { return digitsOf(value); },
      check: function (value) { return /^\d{4,17}$/.test(digitsOf(value)) ? null : 'An account number is 4 to 17 digits'; },
    },
  };

  /** A split expiry (month and year fields) as the API's `MM/YY`. */
  function joinExpiry(month, year) {
    return twoDigits(Number(digitsOf(month))) + '/' + twoDigits(Number(digitsOf(year)) % 100);
  }

  function isSeparator(ch) {
    return ch === ' ' || ch === '/';
  }

  /** Where the caret goes after a reformat: after as many digits as were before it. */
  function caretAfterDigits(text, count) {
    if (count === 0) return 0;
    var seen = 0;
    for (var i = 0; i < text.length; i++) {
      if (/\d/.test(text[i])) seen++;
      if (seen === count) return i + 1;
    }
    return text.length;
  }

  /**
   * Wires an input of one kind: reformats on every edit, keeping the caret after the same digits;
   * Backspace right after a separator the field inserted deletes the digit before it.
   */
  function attach(input, kindName, onEdited) {
    var kind = KINDS[kindName];
    if (!kind) return;
    function apply(deleting, typedSlash) {
      var before = input.value;
      var caret = input.selectionStart === null ? before.length : input.selectionStart;
      var digitsBefore = digitsOf(before.slice(0, caret)).length;
      var slashEnd = typedSlash || (/[/\-.]\s*$/.test(before.slice(0, caret)) && !deleting);
      var after = kind.format(before, deleting, slashEnd);
      if (after === before) return;
      input.value = after;
      var at = caretAfterDigits(after, digitsBefore);
      // Typing up to a separator the field adds puts the caret past it.
      if (!deleting && caret >= before.length) at = after.length;
      if (document.activeElement === input) input.setSelectionRange(at, at);
    }
    input.addEventListener('input', function (event) {
      var type = event.inputType || '';
      apply(type.indexOf('delete') === 0, typeof event.data === 'string' && /[/\-.]$/.test(event.data));
      if (onEdited) onEdited();
    });
    input.addEventListener('keydown', function (event) {
      if (event.key !== 'Backspace' || event.ctrlKey || event.metaKey || event.altKey) return;
      var start = input.selectionStart;
      if (start === null || start !== input.selectionEnd || start < 2) return;
      var value = input.value;
      if (!isSeparator(value[start - 1]) || !/\d/.test(value[start - 2])) return;
      event.preventDefault();
      var atEnd = start === value.length;
      var next = value.slice(0, start - 2) + (atEnd ? '' : value.slice(start - 1));
      var digitsBefore = digitsOf(value.slice(0, start - 2)).length;
      input.value = kind.format(next, true, false);
      var at = caretAfterDigits(input.value, digitsBefore);
      input.setSelectionRange(at, at);
      input.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'deleteContentBackward' }));
    });
  }

  root.SettleInputs = {
    KINDS: KINDS,
    attach: attach,
    digitsOf: digitsOf,
    parseExpiry: parseExpiry,
    joinExpiry: joinExpiry,
    luhnValid: luhnValid,
    abaValid: abaValid,
  };
})(typeof window !== 'undefined' ? window : globalThis);
