/**
 * An invoice's e-mail to its customer (CONTRACT §25): sent when an operator asks
 * (POST /invoices/{id}/resend_email), never by itself when an invoice is made. It says which
 * invoice it is, what is due and when, and where to pay it: the page of an active payment link
 * for the invoice's balance, made with the message when the invoice has none (that link sends no
 * e-mail of its own). It goes through the outbox of link e-mails, sent by the worker. It lives with
 * the links, which read invoices already, so the two families import each other one way only.
 */
import { AUDIT_ACTIONS, recordAuditAction } from '../../db/auditActions.ts';
import { rows } from '../../db/connection.ts';
import { selectObjectById } from '../../db/objects.ts';
import { STORED_ROW } from '../../db/storedRow.ts';
import { tenantScan } from '../../db/tenant.ts';
import { createNested } from '../../engine/operations.ts';
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { isPlainObject, type Json } from '../../engine/view.ts';
import { conflict, notFound } from '../../errors.ts';
import { accounts } from '../accounts/family.ts';
import type { QueuedLinkEmail } from '../intents/emailRepository.ts';
import { queueCustomerEmail } from '../intents/outbox.ts';
import { recipientOf } from './emails.ts';
import { paymentLinks } from './family.ts';
import { paymentLinkUrl } from './url.ts';
import { OPEN_TO_PAYMENTS } from '../invoices/itemRules.ts';
import { lockInvoice } from '../invoices/repository.ts';

export interface InvoiceEmail extends QueuedLinkEmail {
  paymentLinkId: string;
  url: string;
}

const balanceOf = (invoice: StoredObject): number => Number((invoice.data.totals as Json | undefined)?.balance_due ?? 0);

/** The newest active payment link for the invoice that asks for exactly its balance, if any. */
async function activeLinkFor(ctx: RuleContext, invoice: StoredObject): Promise<StoredObject | null> {
  const scope = tenantScan(ctx.tenant);
  const found = await rows<StoredObject>(ctx.tx,
    `select ${STORED_ROW} from payment_links
      where ${scope.sql} and data->>'invoice_id' = ? and data->>'status' = 'active' and (data->>'amount')::bigint = ?
      order by created_at desc, id desc limit 1`,
    [...scope.bindings, invoice.id, balanceOf(invoice)]);
  return found[0] ?? null;
}

/** What the message says the invoice is: its number or id, description, balance due and due date. */
function summaryOf(invoice: StoredObject): string {
  const name = `Invoice ${String(invoice.data.number ?? invoice.id)}`;
  const description = typeof invoice.data.description === 'string' && invoice.data.description !== '' ? `: ${invoice.data.description}` : '';
  return `${name}${description}\nAmount due: ${(balanceOf(invoice) / 100).toFixed(2)}, due ${String(invoice.data.due_date)}.`;
}

/**
 * Queues the invoice's e-mail to its customer as a new message (the first is numbered 0), audited
 * as `resend_email`. The invoice is locked meanwhile, so two at once share one payment link and
 * are two numbered messages. Refused (409) for an invoice with nothing to pay (draft, paid,
 * closed) or whose customer has no e-mail address.
 */
export async function sendInvoiceEmail(ctx: RuleContext, invoiceId: string): Promise<InvoiceEmail> {
  const invoice = await lockInvoice(ctx.tx, ctx.tenant, invoiceId);
  if (!invoice) throw notFound(`No invoice with id ${invoiceId}`);
  const status = String(invoice.data.status);
  if (status === 'draft') throw conflict(`Invoice ${invoiceId} is a draft: publish it (status open) before sending it`);
  if (!OPEN_TO_PAYMENTS.has(status)) throw conflict(`Invoice ${invoiceId} is ${status}: nothing is due, so it is not sent`);
  const payerId = isPlainObject(invoice.data.payer) ? invoice.data.payer.account_id : undefined;
  const payer = typeof payerId === 'string' ? await selectObjectById(ctx.tx, accounts.table, ctx.tenant, payerId) : null;
  const to = recipientOf(payer);
  if (!to) throw conflict(`Invoice ${invoiceId} has no customer with an e-mail address to send it to`);
  const link = await activeLinkFor(ctx, invoice)
    ?? await createNested({ ...ctx, callerEmailsCustomer: true }, paymentLinks, { type: 'one_time', invoice_id: invoice.id });
  const url = paymentLinkUrl(link.id);
  const queued = await queueCustomerEmail(ctx, { objectType: 'invoice', id: invoice.id }, to, url, summaryOf(invoice), true);
  // A resend is numbered after the last message, so the outbox always takes it.
  if (!queued) throw new Error(`invoice ${invoice.id}: the outbox took no message`);
  await recordAuditAction(ctx.tx, ctx.tenant, AUDIT_ACTIONS.resendEmail, 'invoice', invoice.id,
    { email_id: queued.id, recipient: queued.recipient, payment_link_id: link.id });
  return { ...queued, paymentLinkId: link.id, url };
}
