/**
 * `/enroll/<intent or payment activation id>` (CONTRACT §13, §16): a server-rendered page that
 * collects a name and a bank account (and, for an account enrollment link, the business's legal
 * name and tax id) and completes the enrollment through the intents family's own steps. Plain
 * HTML form posts: no script needed, labels tied to inputs, each error beside its input.
 */
import type { Context } from 'koa';
import { ApiError } from '../errors.ts';
import { completeAccountEnrollment, completePayoutEnrollment } from '../families/intents/enrollment.ts';
import type { RequestState } from '../http/state.ts';
import { findEnrollmentLink, type EnrollmentLink } from './enrollmentLink.ts';
import { escapeHtml, layout, renderClosedPage } from './checkoutPage.ts';

const MAX_FORM_BYTES = 16 * 1024;

type Values = Record<string, string>;
type Errors = Record<string, string>;

interface Input {
  name: string;
  label: string;
  autocomplete: string;
  inputmode?: string;
}

const PAYOUT_FIELDS: Input[] = [
  { name: 'name', label: 'Full name', autocomplete: 'name' },
  { name: 'email', label: 'E-mail (optional)', autocomplete: 'email' },
  { name: 'routing_number', label: 'Routing number', autocomplete: 'off', inputmode: 'numeric' },
  { name: 'account_number', label: 'Account number', autocomplete: 'off', inputmode: 'numeric' },
];
const ACCOUNT_FIELDS: Input[] = [
  { name: 'name', label: 'Account name', autocomplete: 'organization' },
  { name: 'legal_name', label: 'Legal business name', autocomplete: 'organization' },
  { name: 'tax_id', label: 'Tax id (EIN)', autocomplete: 'off', inputmode: 'numeric' },
  { name: 'routing_number', label: 'Routing number', autocomplete: 'off', inputmode: 'numeric' },
  { name: 'account_number', label: 'Account number', autocomplete: 'off', inputmode: 'numeric' },
];

function input(field: Input, values: Values, errors: Errors): string {
  const error = errors[field.name];
  const describedBy = error ? ` aria-describedby="${field.name}-error" aria-invalid="true"` : '';
  return `<div class="field">
  <label for="${field.name}">${escapeHtml(field.label)}</label>
  <input id="${field.name}" name="${field.name}" autocomplete="${field.autocomplete}"${field.inputmode ? ` inputmode="${field.inputmode}"` : ''} value="${escapeHtml(values[field.name] ?? '')}"${describedBy}>
  ${error ? `<p class="error" id="${field.name}-error">${escapeHtml(error)}</p>` : ''}
</div>`;
}

function renderForm(link: EnrollmentLink, values: Values, errors: Errors): string {
  const fields = link.kind === 'payouts' ? PAYOUT_FIELDS : ACCOUNT_FIELDS;
  const title = link.kind === 'payouts' ? 'Get paid by bank transfer' : 'Open your processing account';
  const intro = link.entityName ? `<p>${escapeHtml(link.entityName)} asks for your bank details to pay you.</p>` : '<p>Enter your details to finish enrolling.</p>';
  const summary = errors.form ? `<p class="error" role="alert">${escapeHtml(errors.form)}</p>` : '';
  return layout(title, `<h1>${escapeHtml(title)}</h1>
${intro}
${summary}
<form method="post" novalidate>
${fields.map((f) => input(f, values, errors)).join('\n')}
<button type="submit">Enroll</button>
</form>`, false);
}

/** `{bank_account: {account_number: "…"}}` style details → the page's flat field names. */
function fieldErrors(details: Record<string, unknown> | undefined): Errors {
  const errors: Errors = {};
  const walk = (value: unknown, key: string) => {
    if (value && typeof value === 'object') for (const [k, v] of Object.entries(value as Record<string, unknown>)) walk(v, k);
    else if (typeof value === 'string') errors[key === 'legal_name' || key === 'value' ? (key === 'value' ? 'tax_id' : key) : key] = value;
  };
  walk(details, 'form');
  return errors;
}

async function readForm(ctx: Context): Promise<Values | null> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) return null;
    chunks.push(chunk as Buffer);
  }
  const values: Values = {};
  // Only the page's own fields are read; nothing is built from a key the client chose.
  const params = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  for (const field of [...PAYOUT_FIELDS, ...ACCOUNT_FIELDS]) values[field.name] = (params.get(field.name) ?? '').trim().slice(0, 256);
  return values;
}

function required(link: EnrollmentLink, values: Values): Errors {
  const errors: Errors = {};
  const fields = link.kind === 'payouts' ? PAYOUT_FIELDS : ACCOUNT_FIELDS;
  for (const field of fields) if (field.name !== 'email' && !values[field.name]) errors[field.name] = 'Required';
  return errors;
}

export type PageAnswer = { status: number; html: string };

function closed(link: EnrollmentLink | null): PageAnswer | null {
  if (!link) return { status: 404, html: renderClosedPage('Link not found', 'This enrollment link is not valid. Check the address, or ask for a new link.', null) };
  if (link.status === 'finished') return { status: 410, html: renderClosedPage('Already enrolled', 'This link has been used. Nothing more is needed here.', null) };
  if (link.status !== 'pending' || link.expired) return { status: 410, html: renderClosedPage('This link has expired', 'Enrollment links are valid for 7 days. Ask for a new link.', null) };
  return null;
}

export async function showEnrollPage(ctx: Context & { state: RequestState }, id: string): Promise<PageAnswer> {
  const { db, domain } = ctx.state.services;
  const link = await findEnrollmentLink(db, id, domain.now());
  return closed(link) ?? { status: 200, html: renderForm(link!, {}, {}) };
}

export async function submitEnrollPage(ctx: Context & { state: RequestState }, id: string): Promise<PageAnswer> {
  const { db, domain } = ctx.state.services;
  const link = await findEnrollmentLink(db, id, domain.now());
  const shut = closed(link);
  if (shut) return shut;
  const values = await readForm(ctx);
  if (!values) return { status: 413, html: renderForm(link!, {}, { form: 'The form was too large.' }) };
  const missing = required(link!, values);
  if (Object.keys(missing).length) return { status: 400, html: renderForm(link!, values, missing) };
  const bank = { routing_number: values.routing_number, account_number: values.account_number };
  try {
    await db.transaction(async (tx) => {
      const ctxRule = { tx, tenant: link!.tenant, version: 'v2' as const, principal: { kind: 'secret' as const, keyId: `enrollment:${id}`, settings: {} }, domain };
      if (link!.kind === 'payouts') await completePayoutEnrollment(ctxRule, link!.target, { name: values.name, email: values.email || undefined, bank_account: bank });
      else await completeAccountEnrollment(ctxRule, link!.target, { name: values.name, entity: { type: 'business', legal_name: values.legal_name, tax_id: { value: values.tax_id } }, bank_account: bank });
    });
  } catch (error) {
    if (!(error instanceof ApiError) || error.status >= 500) throw error;
    if (error.status === 409) return closed({ ...link!, expired: true }) ?? { status: 410, html: '' };
    return { status: 400, html: renderForm(link!, values, { form: 'Please correct the fields marked below.', ...fieldErrors(error.details) }) };
  }
  return { status: 200, html: renderClosedPage('You are enrolled', 'Your details were saved. You can close this page.', null) };
}
