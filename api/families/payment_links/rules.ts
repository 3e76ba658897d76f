/**
 * Payment link rules: biller and payer (inferred like an invoice's), a link for an invoice takes
 * the invoice's balance and description, the statuses a client may set, the `url`, and the
 * `payment_link:status` event of each status change.
 */
import { statusEvent, type EventDraft } from '../../db/events.ts';
import type { FamilyRules, RuleContext, StoredObject } from '../../engine/family.ts';
import { isPlainObject, type Json } from '../../engine/view.ts';
import { invalidAttributes } from '../../errors.ts';
import { OPEN_TO_PAYMENTS } from '../invoices/itemRules.ts';
import { lockInvoice } from '../invoices/repository.ts';
import { createInlinePayer, findPayer, resolveBiller } from '../invoices/parties.ts';
import { customerByEmail } from '../accounts/repository.ts';
import { emailCustomer } from './emails.ts';
import { paymentLinkUrl } from './url.ts';
import { PAYMENT_LINK_STATUS_TRIGGER } from './triggers.ts';

function accountOf(data: Json, side: 'payer' | 'biller'): string | undefined {
  const party = data[side];
  return isPlainObject(party) && typeof party.account_id === 'string' ? party.account_id : undefined;
}

function names(ctx: RuleContext) {
  return ctx.version === 'v1' ? { payer: 'customer_id', biller: 'processing_id' } : { payer: 'payer[account_id]', biller: 'biller[account_id]' };
}

/** With an invoice, the link collects its balance due, for its payer and biller. */
async function fromInvoice(ctx: RuleContext, data: Json): Promise<void> {
  const invoice = await lockInvoice(ctx.tx, ctx.tenant, String(data.invoice_id));
  if (!invoice) throw invalidAttributes({ invoice_id: 'No invoice with this id' });
  const status = String(invoice.data.status);
  if (!OPEN_TO_PAYMENTS.has(status)) throw invalidAttributes({ invoice_id: `A ${status} invoice accepts no payment` });
  const balance = Number((invoice.data.totals as Json).balance_due);
  if (data.amount !== undefined && data.amount !== balance) throw invalidAttributes({ amount: 'Set by the invoice: its balance due' });
  data.amount = balance;
  data.amount_editable = false;
  data.description ??= invoice.data.description ?? `Invoice ${String(invoice.data.number ?? invoice.id)}`;
  for (const side of ['payer', 'biller'] as const) {
    const given = accountOf(data, side);
    const expected = accountOf(invoice.data, side);
    if (given && given !== expected) throw invalidAttributes({ [names(ctx)[side]]: `Must be the invoice's ${side} (${expected})` });
    data[side] = { ...(isPlainObject(data[side]) ? data[side] : {}), account_id: expected };
  }
}

/** An inline `customer: {name, email}` names an existing customer of that e-mail when there is one. */
async function reuseInlineCustomer(ctx: RuleContext, data: Json): Promise<void> {
  const inline = data.customer;
  if (!isPlainObject(inline) || typeof inline.email !== 'string' || accountOf(data, 'payer')) return;
  const known = await customerByEmail(ctx.tx, ctx.tenant, inline.email);
  if (!known) return;
  delete data.customer;
  data.payer = { ...(isPlainObject(data.payer) ? data.payer : {}), account_id: known.id };
}

async function prepareCreate(ctx: RuleContext, row: StoredObject): Promise<StoredObject> {
  const data: Json = { ...row.data };
  if (data.status !== 'active') throw invalidAttributes({ status: 'A new payment link is active' });
  await reuseInlineCustomer(ctx, data);
  await createInlinePayer(ctx, data);
  if (typeof data.invoice_id === 'string') await fromInvoice(ctx, data);
  if (typeof data.description !== 'string' || data.description === '') throw invalidAttributes({ description: 'Required' });
  if (data.amount === undefined || data.amount === null) data.amount_editable = true;
  const payer = await findPayer(ctx, accountOf(data, 'payer'));
  data.biller = { account_id: await resolveBiller(ctx, accountOf(data, 'biller'), payer) };
  data.transaction_id = null;
  if (!ctx.callerEmailsCustomer) await emailCustomer(ctx, { ...row, data }, payer);
  return { ...row, data };
}

async function prepareUpdate(ctx: RuleContext, next: StoredObject, previous: StoredObject): Promise<StoredObject> {
  const data: Json = { ...next.data };
  if (data.invoice_id !== previous.data.invoice_id) throw invalidAttributes({ invoice_id: 'Cannot be changed; create another link' });
  if (previous.data.invoice_id && data.amount !== previous.data.amount) throw invalidAttributes({ amount: 'Set by the invoice: its balance due' });
  if (data.amount === null) data.amount_editable = true;
  if (accountOf(data, 'payer') !== accountOf(previous.data, 'payer')) await findPayer(ctx, accountOf(data, 'payer'));
  if (accountOf(data, 'biller') !== accountOf(previous.data, 'biller')) data.biller = { account_id: await resolveBiller(ctx, accountOf(data, 'biller'), null) };
  const from = String(previous.data.status);
  const to = String(data.status);
  if (from !== to) {
    if (from === 'completed') throw invalidAttributes({ status: 'A completed link is final' });
    // `transaction_id` is read-only to clients: only the payment that pays the link sets it.
    if (to === 'completed' && data.transaction_id === previous.data.transaction_id) throw invalidAttributes({ status: 'A link completes when it is paid' });
  }
  return { ...next, data };
}

function linkStatusEvent(id: string, status: string): EventDraft {
  return statusEvent(PAYMENT_LINK_STATUS_TRIGGER, 'payment_link', id, status);
}

function events(_ctx: RuleContext, next: StoredObject | null, previous: StoredObject | null): EventDraft[] {
  if (!next || !previous || next.data.status === previous.data.status) return [];
  return [linkStatusEvent(next.id, String(next.data.status))];
}

async function load(_ctx: RuleContext, rows: StoredObject[]): Promise<void> {
  for (const row of rows) row.data = { ...row.data, url: paymentLinkUrl(row.id) };
}

export const paymentLinkRules: FamilyRules = {
  prepare: (ctx, next, previous) => (previous ? prepareUpdate(ctx, next, previous) : prepareCreate(ctx, next)),
  events,
  load,
};
