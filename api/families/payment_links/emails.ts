/**
 * A payment link's e-mail to its customer: sent once when the link is made for a customer with an
 * e-mail address, and again when an operator asks (POST /payment_links/{id}/resend_email), each
 * time a new message of the outbox (api/families/intents/outbox.ts) with what the link is for and
 * its page.
 */
import { AUDIT_ACTIONS, recordAuditAction } from '../../db/auditActions.ts';
import { selectObjectById } from '../../db/objects.ts';
import type { Db } from '../../db/connection.ts';
import type { RuleContext, StoredObject, Tenant } from '../../engine/family.ts';
import { isPlainObject } from '../../engine/view.ts';
import { conflict, notFound } from '../../errors.ts';
import { accounts } from '../accounts/family.ts';
import { queueCustomerEmail } from '../intents/outbox.ts';
import type { QueuedLinkEmail } from '../intents/emailRepository.ts';
import { lockPaymentLink } from './repository.ts';
import { paymentLinkUrl } from './url.ts';

/** The link's customer's address and name, or null when it has no customer with an e-mail. */
export function recipientOf(payer: StoredObject | null): { email: string; name: string | null } | null {
  const email = payer?.data.email;
  if (typeof email !== 'string' || email === '') return null;
  return { email, name: typeof payer!.data.name === 'string' ? payer!.data.name : null };
}

/** Queues the link's e-mail to its customer (the first, or with `resend` one more); null when it has nobody to send to. */
export async function emailCustomer(ctx: Pick<RuleContext, 'tx' | 'tenant'>, link: StoredObject, payer: StoredObject | null, resend = false): Promise<QueuedLinkEmail | null> {
  const to = recipientOf(payer);
  if (!to) return null;
  const amount = typeof link.data.amount === 'number' ? ` (amount due: ${(link.data.amount / 100).toFixed(2)})` : '';
  return queueCustomerEmail(ctx, { objectType: 'payment_link', id: link.id }, to, paymentLinkUrl(link.id), `${String(link.data.description)}${amount}`, resend);
}

/**
 * Sends an active link's e-mail to its customer again, as a new message, audited as
 * `resend_email`. The link is locked meanwhile, so two resends at once are two numbered messages.
 */
export async function resendPaymentLinkEmail(db: Db, tenant: Tenant, linkId: string): Promise<QueuedLinkEmail> {
  return db.transaction(async (tx) => {
    const link = await lockPaymentLink(tx, tenant, linkId);
    if (!link) throw notFound(`No payment link with id ${linkId}`);
    const status = String(link.data.status);
    if (status !== 'active') throw conflict(`Payment link ${linkId} is ${status}: it takes no payment, so its e-mail is not sent again`);
    const payerId = isPlainObject(link.data.payer) ? link.data.payer.account_id : undefined;
    const payer = typeof payerId === 'string' ? await selectObjectById(tx, accounts.table, tenant, payerId) : null;
    const queued = await emailCustomer({ tx, tenant }, link, payer, true);
    if (!queued) throw conflict(`Payment link ${linkId} has no customer with an e-mail address to send it to`);
    await recordAuditAction(tx, tenant, AUDIT_ACTIONS.resendEmail, 'payment_link', linkId, { email_id: queued.id, recipient: queued.recipient });
    return queued;
  });
}
