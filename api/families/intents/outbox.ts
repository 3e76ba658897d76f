/**
 * The e-mail outbox of links (CONTRACT §13): queued with the intent or payment activation in its
 * transaction, one row and one `send_link_email` job per recipient, and the worker's claim and
 * outcome statements. A recipient is queued once per link and resend (unique), each message is
 * claimed once (`sending`), and only a definite SMTP refusal sends the row back to `pending` for
 * another attempt.
 */
import type { Db } from '../../db/connection.ts';
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { newId } from '../../ids.ts';
import { claimPendingLinkEmail, insertLinkEmails, setLinkEmailSent, setLinkEmailRefused, type LinkEmail, type QueuedLinkEmail } from './emailRepository.ts';
import { enqueueLinkJob } from './repository.ts';

export type { LinkEmail } from './emailRepository.ts';

export const SEND_TASK = 'send_link_email';

type Recipient = { name: string | null; email: string };

/** The payload of a `send_link_email` job: the message and its tenant. */
export interface SendJob {
  email_id: string;
  org_id: string;
  environment: string;
}

export async function queueLinkEmails(ctx: RuleContext, objectType: LinkEmail['object_type'], row: StoredObject): Promise<void> {
  const recipients = (Array.isArray(row.data.send_to) ? row.data.send_to : []) as Recipient[];
  if (recipients.length === 0 || typeof row.data.url !== 'string') return;
  // The first spelling of an address wins (with its name); case does not make another recipient.
  const byAddress = new Map<string, Recipient>();
  for (const r of recipients) if (!byAddress.has(r.email.toLowerCase())) byAddress.set(r.email.toLowerCase(), r);
  const queued = [...byAddress.values()].map((r) => ({ id: newId('eml'), email: r.email.toLowerCase(), name: r.name }));
  await insertLinkEmails(ctx.tx, ctx.tenant, { objectType, objectId: row.id, kind: row.type, url: row.data.url }, queued, SEND_TASK);
}

/**
 * Queues one message about a payment link or an invoice to its customer: the first once per
 * address per object, or (`resend`) one more. Answers the row queued, if any.
 */
export async function queueCustomerEmail(ctx: Pick<RuleContext, 'tx' | 'tenant'>, about: { objectType: 'payment_link' | 'invoice'; id: string }, to: Recipient,
  url: string, summary: string, resend = false): Promise<QueuedLinkEmail | null> {
  const recipient = { id: newId('eml'), email: to.email.toLowerCase(), name: to.name };
  const message = { objectType: about.objectType, objectId: about.id, kind: about.objectType, url, summary };
  const [queued] = await insertLinkEmails(ctx.tx, ctx.tenant, message, [recipient], SEND_TASK, resend);
  return queued ?? null;
}

/** Takes a pending message for one attempt; null when it was sent, failed, or is being sent. */
export async function claimLinkEmail(db: Db, job: SendJob): Promise<LinkEmail | null> {
  return claimPendingLinkEmail(db, job.email_id, job.org_id, job.environment);
}

export async function markLinkEmailSent(db: Db, email: LinkEmail, messageId: string | null): Promise<void> {
  await setLinkEmailSent(db, email, messageId);
}

/** A definite refusal: back to pending with a retry at `retryAt`, or failed for good when there is none. */
export async function markLinkEmailRefused(db: Db, email: LinkEmail, error: string, retryAt: Date | null): Promise<void> {
  await db.transaction(async (tx) => {
    await setLinkEmailRefused(tx, email, retryAt ? 'pending' : 'failed', error.slice(0, 1000));
    if (retryAt) {
      const job: SendJob = { email_id: email.id, org_id: email.org_id, environment: email.environment };
      await enqueueLinkJob(tx, SEND_TASK, job, retryAt, `${SEND_TASK}:${email.id}`);
    }
  });
}
