/**
 * `/enroll/<intent or payment activation id>` (CONTRACT §13, §16): a server-rendered page that
 * collects a name and a bank account (and, for an account enrollment link, the business's legal
 * name and tax id) and completes the enrollment through the intents family's own steps. Plain
 * HTML form posts: no script needed, labels tied to inputs, each error beside its input. The
 * form pieces here also make Payload.ProcessingAccount's frame (processingAccountPage.ts).
 */
import type { Context } from 'koa';
import { ApiError } from '../errors.ts';
import { completeAccountEnrollment, completePayoutEnrollment, type AccountEnrollment } from '../families/intents/enrollment.ts';
import type { RequestState } from '../http/state.ts';
import { findEnrollmentLink, type EnrollmentLink } from './enrollmentLink.ts';
import { escapeHtml, layout, renderClosedPage } from './checkoutPage.ts';

const MAX_FORM_BYTES = 16 * 1024;

export type Values = Record<string, string>;
export type Errors = Record<string, string>;
export type PageAnswer = { status: number; html: string };

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
/** What opening a processing account asks for: the account, its business entity and its funding bank account. */
export const ACCOUNT_FIELDS: Input[] = [
  { name: 'name', label: 'Account name', autocomplete: 'organization' },
  { name: 'legal_name', label: 'Legal business name', autocomplete: 'organization' },
  { name: 'tax_id', label: 'Tax id (EIN)', autocomplete: 'off', inputmode: 'numeric' },
  { name: 'routing_number', label: 'Routing number', autocomplete: 'off', inputmode: 'numeric' },
  { name: 'account_number', label: 'Account number', autocomplete: 'off', inputmode: 'numeric' },
];

/** A form page: its heading, the words under it, its inputs, what its button says, and hidden values it carries. */
export interface EnrollForm {
  title: string;
  intro: string;
  fields: Input[];
  button: string;
  hidden?: Values;
}

function input(field: Input, values: Values, errors: Errors): string {
  const error = errors[field.name];
  const describedBy = error ? ` aria-describedby="${field.name}-error" aria-invalid="true"` : '';
  return `<div class="field">
  <label for="${field.name}">${escapeHtml(field.label)}</label>
  <input id="${field.name}" name="${field.name}" type="text" autocomplete="${field.autocomplete}"${field.inputmode ? ` inputmode="${field.inputmode}"` : ''} value="${escapeHtml(values[field.name] ?? '')}"${describedBy}>
  ${error ? `<p class="error" id="${field.name}-error">${escapeHtml(error)}</p>` : ''}
</div>`;
}

/** The form's markup (the caller wraps it in a page), values kept and errors beside their inputs. */
export function enrollFormHtml(form: EnrollForm, values: Values, errors: Errors): string {
  const summary = errors.form ? `<p class="error" role="alert">${escapeHtml(errors.form)}</p>` : '';
  const hidden = Object.entries(form.hidden ?? {}).map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`);
  return `<h1>${escapeHtml(form.title)}</h1>
<p>${escapeHtml(form.intro)}</p>
${summary}
<form method="post" novalidate>
${[...hidden, ...form.fields.map((f) => input(f, values, errors))].join('\n')}
<button type="submit">${escapeHtml(form.button)}</button>
</form>`;
}

function linkForm(link: EnrollmentLink): EnrollForm {
  const payouts = link.kind === 'payouts';
  return {
    title: payouts ? 'Get paid by bank transfer' : 'Open your processing account',
    intro: link.entityName ? `${link.entityName} asks for your bank details to pay you.` : 'Enter your details to finish enrolling.',
    fields: payouts ? PAYOUT_FIELDS : ACCOUNT_FIELDS,
    button: 'Enroll',
  };
}

function renderForm(link: EnrollmentLink, values: Values, errors: Errors): string {
  const form = linkForm(link);
  return layout(form.title, enrollFormHtml(form, values, errors), false);
}

/** `{bank_account: {account_number: "…"}}` style details → the page's flat field names. */
function fieldErrors(details: Record<string, unknown> | undefined): Errors {
  const errors: Errors = {};
  const walk = (value: unknown, key: string) => {
    if (value && typeof value === 'object') for (const [k, v] of Object.entries(value as Record<string, unknown>)) walk(v, k);
    else if (typeof value === 'string') errors[key === 'value' ? 'tax_id' : key] = value;
  };
  walk(details, 'form');
  return errors;
}

/** Bank numbers people paste with spaces or dashes (`021 000 021`): kept as their digits. */
const NUMBER_FIELDS = new Set(['routing_number', 'account_number']);

function posted(name: string, value: string): string {
  const text = value.trim().slice(0, 256);
  return NUMBER_FIELDS.has(name) ? text.replace(/[\s-]/g, '') : text;
}

/** The posted form, only the names asked for (nothing is built from a key the client chose); null when too large. */
export async function readForm(ctx: Context, names: string[]): Promise<Values | null> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) return null;
    chunks.push(chunk as Buffer);
  }
  const params = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  return Object.fromEntries(names.map((name) => [name, posted(name, params.get(name) ?? '')]));
}

/** Every field but the optional e-mail must be filled. */
export function missingFields(form: EnrollForm, values: Values): Errors {
  const errors: Errors = {};
  for (const field of form.fields) if (field.name !== 'email' && !values[field.name]) errors[field.name] = 'Required';
  return errors;
}

/** ACCOUNT_FIELDS' values as the domain's processing-account input. */
export function accountEnrollment(values: Values): AccountEnrollment {
  return {
    name: values.name,
    entity: { type: 'business', legal_name: values.legal_name, tax_id: { value: values.tax_id } },
    bank_account: { routing_number: values.routing_number, account_number: values.account_number },
  };
}

/**
 * Runs a form's domain step: null when it succeeded; the form again with the API's field errors
 * (400), or `onConflict()` when the capability was used or expired meanwhile (409).
 */
export async function completeForm(step: () => Promise<unknown>, again: (errors: Errors) => string, onConflict: () => PageAnswer): Promise<PageAnswer | null> {
  try {
    await step();
    return null;
  } catch (error) {
    if (!(error instanceof ApiError) || error.status >= 500) throw error;
    if (error.status === 409) return onConflict();
    return { status: 400, html: again({ form: 'Please correct the fields marked below.', ...fieldErrors(error.details) }) };
  }
}

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
  const found = await findEnrollmentLink(db, id, domain.now());
  const shut = closed(found);
  if (shut) return shut;
  const link = found!;
  const form = linkForm(link);
  const values = await readForm(ctx, form.fields.map((f) => f.name));
  if (!values) return { status: 413, html: renderForm(link, {}, { form: 'The form was too large.' }) };
  const missing = missingFields(form, values);
  if (Object.keys(missing).length) return { status: 400, html: renderForm(link, values, missing) };
  const failed = await completeForm(() => db.transaction(async (tx) => {
    const ctxRule = { tx, tenant: link.tenant, version: 'v2' as const, principal: { kind: 'secret' as const, keyId: `enrollment:${id}`, settings: {} }, domain };
    if (link.kind === 'payouts') {
      const bank = { routing_number: values.routing_number, account_number: values.account_number };
      await completePayoutEnrollment(ctxRule, link.target, { name: values.name, email: values.email || undefined, bank_account: bank });
    } else {
      await completeAccountEnrollment(ctxRule, link.target, accountEnrollment(values));
    }
  }), (errors) => renderForm(link, values, errors), () => closed({ ...link, expired: true })!);
  return failed ?? { status: 200, html: renderClosedPage('You are enrolled', 'Your details were saved. You can close this page.', null) };
}
