/**
 * Payload.ProcessingAccount's frame, `/elements/processing-account/<client token>` (CONTRACT §16):
 * the enrollment page's processing-account form, framed by the merchant's page, authorised by a
 * processing_account_plugin client token in its address. Posting it opens the processing account
 * through the intents family's step (spending the token); the page then tells the merchant page
 * the new account's id (pages/processing-account.js, to the origin and session that opened it).
 */
import type { Context } from 'koa';
import type { Db } from '../db/connection.ts';
import { completeAccountPlugin } from '../families/intents/enrollment.ts';
import type { RequestState } from '../http/state.ts';
import { escapeHtml, layout } from './checkoutPage.ts';
import { findCheckout, type CheckoutState } from './checkoutToken.ts';
import { ACCOUNT_FIELDS, accountEnrollment, completeForm, enrollFormHtml, missingFields, readForm, type EnrollForm, type Errors, type PageAnswer, type Values } from './enrollPage.ts';

const KIND = 'processing_account_plugin';
const SCRIPT = '/pages/processing-account.js';

/** Where the frame reports to: the opener's session id and origin (from the address's #fragment, kept through the post). */
interface Opener {
  sid: string;
  origin: string;
}

function openerOf(values: Values): Opener {
  const sid = /^[0-9a-f]{32}$/.test(values.sid ?? '') ? values.sid : '';
  let origin = '';
  try {
    const url = new URL(values.origin ?? '');
    if ((url.protocol === 'http:' || url.protocol === 'https:') && url.origin === values.origin) origin = url.origin;
  } catch {
    // not an origin: the page reports to nobody
  }
  return { sid, origin };
}

function framePage(title: string, inner: string, opener: Opener, accountId?: string): string {
  const data = `data-sid="${escapeHtml(opener.sid)}" data-origin="${escapeHtml(opener.origin)}"${accountId ? ` data-account-id="${escapeHtml(accountId)}"` : ''}`;
  return layout(title, `<div id="plugin" ${data}>\n${inner}\n</div>`, SCRIPT);
}

function pluginForm(opener: Opener): EnrollForm {
  return {
    title: 'Open your processing account',
    intro: 'Enter your business and its bank account to start accepting payments.',
    fields: ACCOUNT_FIELDS,
    button: 'Create account',
    hidden: { sid: opener.sid, origin: opener.origin },
  };
}

function renderForm(opener: Opener, values: Values, errors: Errors): string {
  const form = pluginForm(opener);
  return framePage(form.title, enrollFormHtml(form, values, errors), opener);
}

const CLOSED = {
  unknown: [404, 'Form not found', 'This account form is not valid. Ask the site that showed it for a new one.'],
  expired: [410, 'This form has expired', 'Account forms are valid for 30 minutes. Ask the site that showed it for a new one.'],
  used: [410, 'This form has been used', 'A processing account was already opened with this form. Nothing more is needed here.'],
} as const;

function closedPage(state: Exclude<CheckoutState['state'], 'open'>, opener: Opener): PageAnswer {
  const [status, title, text] = CLOSED[state];
  return { status, html: framePage(title, `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(text)}</p>`, opener) };
}

export async function showProcessingAccountFrame(db: Db, token: string): Promise<PageAnswer> {
  const found = await findCheckout(db, token, KIND);
  const opener = { sid: '', origin: '' };
  return found.state === 'open' ? { status: 200, html: renderForm(opener, {}, {}) } : closedPage(found.state, opener);
}

export async function submitProcessingAccountFrame(ctx: Context & { state: RequestState }, token: string): Promise<PageAnswer> {
  const { db, domain } = ctx.state.services;
  const found = await findCheckout(db, token, KIND);
  const values = await readForm(ctx, [...ACCOUNT_FIELDS.map((f) => f.name), 'sid', 'origin']);
  const opener = openerOf(values ?? {});
  if (found.state !== 'open') return closedPage(found.state, opener);
  if (!values) return { status: 413, html: renderForm(opener, {}, { form: 'The form was too large.' }) };
  const missing = missingFields(pluginForm(opener), values);
  if (Object.keys(missing).length) return { status: 400, html: renderForm(opener, values, missing) };
  let accountId = '';
  const failed = await completeForm(() => db.transaction(async (tx) => {
    const ctxRule = { tx, tenant: found.tenant, version: 'v2' as const, principal: { kind: 'secret' as const, keyId: KIND, settings: {} }, domain };
    accountId = await completeAccountPlugin(ctxRule, found.tokenHash, accountEnrollment(values));
  }), (errors) => renderForm(opener, values, errors), () => closedPage('used', opener));
  if (failed) return failed;
  const done = `<h1 tabindex="-1">Processing account created</h1>
<p>Your account is open and its details are being verified. You can close this form.</p>
<p>Account: <span id="account-id">${escapeHtml(accountId)}</span></p>`;
  return { status: 200, html: framePage('Processing account created', done, opener, accountId) };
}
