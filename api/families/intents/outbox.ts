/**
 * The e-mail outbox of links (CONTRACT §13): queued with the intent or payment activation in its
 * transaction, one row and one `send_link_email` job per recipient, and the worker's claim and
 * outcome statements. A recipient is queued once per link (unique), claimed once (`sending`), and
 * only a definite SMTP refusal sends the row back to `pending` for another attempt.
 */
import { rows, type Db } from '../../db/connection.ts';
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { newId } from '../../ids.ts';

export const SEND_TASK = 'send_link_email';

export interface LinkEmail {
  id: string;
  org_id: string;
  environment: string;
  object_type: 'intent' | 'payment_activation';
  object_id: string;
  kind: string;
  recipient: string;
  recipient_name: string | null;
  url: string;
  attempts: number;
}

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
  const unique = [...byAddress.values()];
  const ids = unique.map(() => newId('eml'));
  await rows(ctx.tx,
    `with queued as (
       insert into link_emails (id, org_id, environment, object_type, object_id, kind, recipient, recipient_name, url)
       select id, ?, ?, ?, ?, ?, recipient, name, ? from unnest(?::text[], ?::text[], ?::text[]) as r(id, recipient, name)
       on conflict (object_id, recipient) do nothing
       returning id)
     select count(graphile_worker.add_job(?, json_build_object('email_id', id, 'org_id', ?::text, 'environment', ?::text), job_key => ? || id, max_attempts => 25))
       from queued`,
    [ctx.tenant.orgId, ctx.tenant.environment, objectType, row.id, row.type, row.data.url,
      ids, unique.map((r) => r.email.toLowerCase()), unique.map((r) => r.name),
      SEND_TASK, ctx.tenant.orgId, ctx.tenant.environment, `${SEND_TASK}:`]);
}

/** Takes a pending message for one attempt; null when it was sent, failed, or is being sent. */
export async function claimLinkEmail(db: Db, job: SendJob): Promise<LinkEmail | null> {
  const found = await rows<LinkEmail>(db,
    `update link_emails set state = 'sending', attempts = attempts + 1
      where id = ? and org_id = ? and environment = ? and state = 'pending'
     returning id, org_id, environment, object_type, object_id, kind, recipient, recipient_name, url, attempts`,
    [job.email_id, job.org_id, job.environment]);
  return found[0] ?? null;
}

export async function markLinkEmailSent(db: Db, email: LinkEmail, messageId: string | null): Promise<void> {
  await rows(db, `update link_emails set state = 'sent', sent_at = now(), message_id = ?, last_error = null where id = ? and org_id = ? and environment = ?`,
    [messageId, email.id, email.org_id, email.environment]);
}

/** A definite refusal: back to pending with a retry at `retryAt`, or failed for good when there is none. */
export async function markLinkEmailRefused(db: Db, email: LinkEmail, error: string, retryAt: Date | null): Promise<void> {
  await db.transaction(async (tx) => {
    await rows(tx, `update link_emails set state = ?, last_error = ? where id = ? and org_id = ? and environment = ?`,
      [retryAt ? 'pending' : 'failed', error.slice(0, 1000), email.id, email.org_id, email.environment]);
    if (retryAt) {
      const job: SendJob = { email_id: email.id, org_id: email.org_id, environment: email.environment };
      await rows(tx, 'select graphile_worker.add_job(?, ?::json, run_at => ?::timestamptz, job_key => ?, max_attempts => 25)',
        [SEND_TASK, JSON.stringify(job), retryAt.toISOString(), `${SEND_TASK}:${email.id}`]);
    }
  });
}
