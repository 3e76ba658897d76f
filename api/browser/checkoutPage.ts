/**
 * The hosted checkout page of a checkout_page intent (CONTRACT §16): our own HTML, served with a
 * strict CSP, paying through the API with the token in its path (pages/checkout.js).
 */
import { parseMoney } from '../schema/values.ts';
import { assetUrl } from './assets.ts';
import type { CheckoutState } from './checkoutToken.ts';

export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Only http(s) addresses are followed: a `javascript:` redirect would run on this origin. */
export function safeUrl(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}

function presets(options: Record<string, unknown>): Record<string, unknown> {
  const payment = options.payment;
  return typeof payment === 'object' && payment !== null ? (payment as Record<string, unknown>) : {};
}

function redirects(options: Record<string, unknown>): { completed: string | null; back: string | null } {
  const given = (typeof options.redirects === 'object' && options.redirects) ? options.redirects as Record<string, unknown> : {};
  return { completed: safeUrl(given.completed_url), back: safeUrl(given.return_url) };
}

function amountText(options: Record<string, unknown>): string {
  const parsed = parseMoney(presets(options).amount);
  return parsed.ok ? (Number(parsed.value) / 100).toFixed(2) : '';
}

/** `script`: true for the checkout script, or the path of another page script (an ASSETS key). */
export function layout(title: string, main: string, script: boolean | string): string {
  const src = script === true ? '/pages/checkout.js' : script || null;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${assetUrl('/pages/pages.css')}">
${src === '/pages/checkout.js' ? `<script src="${assetUrl('/pages/inputs.js')}" defer></script>\n` : ''}${src ? `<script src="${assetUrl(src)}" defer></script>\n` : ''}</head>
<body>
<main class="page">
${main}
</main>
</body>
</html>
`;
}

function field(id: string, label: string, attrs: string): string {
  return `<div class="field">
  <label for="${id}">${label}</label>
  <input id="${id}" name="${id}" type="text" ${attrs} aria-describedby="${id}-error">
  <p id="${id}-error" class="error" hidden></p>
</div>`;
}

function cardFields(): string {
  return `<div id="card-fields" class="method">
${field('card_number', 'Card number', 'autocomplete="cc-number" inputmode="numeric" placeholder="1234 1234 1234 1234" required')}
<div class="row">
${field('expiry', 'Expiration date (MM/YY)', 'autocomplete="cc-exp" inputmode="numeric" placeholder="MM/YY" required')}
${field('card_code', 'Security code', 'autocomplete="cc-csc" inputmode="numeric" placeholder="CVC" required')}
</div>
</div>`;
}

function bankFields(hidden: boolean): string {
  return `<div id="bank-fields" class="method"${hidden ? ' hidden' : ''}>
${field('routing_number', 'Routing number', 'inputmode="numeric" autocomplete="off" required')}
${field('account_number', 'Account number', 'inputmode="numeric" autocomplete="off" required')}
<div class="field">
  <label for="account_type">Account type</label>
  <select id="account_type" name="account_type" aria-describedby="account_type-error">
    <option value="checking">Checking</option>
    <option value="savings">Savings</option>
  </select>
  <p id="account_type-error" class="error" hidden></p>
</div>
</div>`;
}

function billingFields(): string {
  return `<fieldset class="billing">
<legend>Billing address</legend>
${field('street_address', 'Street address', 'autocomplete="address-line1" maxlength="256"')}
${field('city', 'City', 'autocomplete="address-level2" maxlength="256"')}
<div class="row">
${field('state_province', 'State / province', 'autocomplete="address-level1" maxlength="256"')}
${field('postal_code', 'Postal code', 'autocomplete="postal-code" maxlength="32" required')}
</div>
</fieldset>`;
}

/** What a hosted payment page shows and how it pays; built from a checkout intent or a payment link. */
export interface PaymentPageView {
  /** `45.67`, or null when the payer enters the amount */
  amount: string | null;
  description: string;
  card: boolean;
  bank: boolean;
  billingAddress: boolean;
  completedUrl: string | null;
  backUrl: string | null;
  /** set when the page's address is not the token itself (a payment link page) */
  token?: string;
  paymentLinkId?: string;
  /** inside Payload.Checkout's frame: results go to the merchant page, not to a redirect */
  embedded?: boolean;
  /** the amount an editable amount input starts with */
  suggestedAmount?: string;
}

export function checkoutView(options: Record<string, unknown>): PaymentPageView {
  const card = options.card_payments !== false;
  const { completed, back } = redirects(options);
  return {
    amount: amountText(options),
    description: String(presets(options).description ?? ''),
    card,
    bank: options.bank_account_payments === true || !card,
    billingAddress: options.billing_address === true,
    completedUrl: completed,
    backUrl: back,
  };
}

/** Payload.Checkout's frame, from a checkout_plugin intent: its amount is fixed unless amount_editable. */
export function pluginView(options: Record<string, unknown>): PaymentPageView {
  const card = options.card_payments !== false;
  const parsed = parseMoney(options.amount);
  const amount = parsed.ok ? (Number(parsed.value) / 100).toFixed(2) : null;
  return {
    amount: options.amount_editable === true ? null : amount,
    suggestedAmount: amount ?? undefined,
    description: String(options.description ?? ''),
    card,
    bank: options.bank_account_payments === true || !card,
    billingAddress: options.billing_address === true,
    completedUrl: null,
    backUrl: null,
    embedded: true,
  };
}

export function renderCheckout(options: Record<string, unknown>): string {
  return renderPaymentPage(checkoutView(options));
}

export function renderPaymentPage(view: PaymentPageView): string {
  const { amount, card, bank, completedUrl: completed, backUrl: back } = view;
  const chooser = card && bank
    ? `<fieldset class="choice">
<legend>Pay with</legend>
<label><input type="radio" name="method" value="card" checked> Card</label>
<label><input type="radio" name="method" value="bank_account"> Bank account</label>
</fieldset>`
    : `<input type="hidden" name="method" value="${card ? 'card' : 'bank_account'}">`;
  const data = [
    completed ? ` data-completed-url="${escapeHtml(completed)}"` : '',
    view.token ? ` data-token="${escapeHtml(view.token)}"` : '',
    view.paymentLinkId ? ` data-payment-link-id="${escapeHtml(view.paymentLinkId)}"` : '',
    view.embedded ? ' data-embedded="true"' : '',
  ].join('');
  const suggested = view.suggestedAmount ? ` value="${escapeHtml(view.suggestedAmount)}"` : '';
  const amountBlock = amount === null
    ? field('amount', 'Amount', `inputmode="decimal" autocomplete="transaction-amount" maxlength="16" required${suggested}`)
    : `<p class="amount">Amount due <strong>${escapeHtml(amount)}</strong></p>`;
  const main = `<h1>Checkout</h1>
<p class="description">${escapeHtml(view.description)}</p>
<form id="checkout" novalidate${data}>
${amountBlock}
${chooser}
${card ? cardFields() : ''}
${bank ? bankFields(card) : ''}
${field('account_holder', card ? 'Name on card' : 'Account holder name', 'autocomplete="name" maxlength="256"')}
${view.billingAddress ? billingFields() : ''}
<p id="form-error" class="error form-error" role="alert" hidden></p>
<button type="submit" id="pay">${amount === null ? 'Pay' : `Pay ${escapeHtml(amount)}`}</button>
${back ? `<a class="back" href="${escapeHtml(back)}">Back</a>` : ''}
</form>
<section id="done" hidden tabindex="-1">
<h2>Payment complete</h2>
<p>Thank you. Your payment was received.</p>
<p>Reference: <span id="reference"></span></p>
${back ? `<a class="back" href="${escapeHtml(back)}">Back</a>` : ''}
</section>`;
  return layout(amount === null ? 'Pay' : `Pay ${amount}`, main, true);
}

const MESSAGES = {
  unknown: ['Checkout not found', 'This checkout link is not valid. Check the address, or ask the merchant for a new link.'],
  expired: ['This checkout has expired', 'Checkout links are valid for 30 minutes. Ask the merchant for a new link.'],
  used: ['This checkout has already been used', 'A payment was already made with this link. Nothing more is due here.'],
} as const;

/** The page for a capability that cannot be paid (unknown, expired or used): plain words, no details. */
export function renderClosed(checkout: CheckoutState): string {
  const [title, text] = MESSAGES[checkout.state === 'open' ? 'unknown' : checkout.state];
  return renderClosedPage(title, text, checkout.state === 'unknown' ? null : redirects(checkout.options).back);
}

export function renderClosedPage(title: string, text: string, back: string | null): string {
  return layout(title, `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(text)}</p>${back ? `\n<a class="back" href="${escapeHtml(back)}">Back</a>` : ''}`, false);
}
