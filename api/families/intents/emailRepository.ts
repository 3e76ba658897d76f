/** SQL of the link e-mail outbox (`link_emails`): queueing with its jobs, the claim and the outcomes. */
import { rows, type Db } from '../../db/connection.ts';
import type { Tenant } from '../../engine/family.ts';

export interface LinkEmail {
  id: string;
  org_id: string;
  environment: string;
  object_type: 'intent' | 'payment_activation' | 'payment_link' | 'invoice';
  object_id: string;
  kind: string;
  recipient: string;
  recipient_name: string | null;
  url: string;
  /** what the message says it is for (a payment link's description and amount) */
  summary: string | null;
  attempts: number;
}

/** What a link's messages share: the link (object type, id, kind) and its page address. */
export interface LinkMessage {
  objectType: LinkEmail['object_type'];
  objectId: string;
  kind: string;
  url: string;
  summary?: string;
}

/** One recipient's row to queue: its new id, its address (as the unique key) and name. */
export interface QueuedRecipient {
  id: string;
  email: string;
  name: string | null;
}

/** A row queued: its id, recipient and resend number (0: the first message). */
export interface QueuedLinkEmail {
  id: string;
  recipient: string;
  resend: number;
}

/**
 * Inserts one row per recipient and, in the same statement, one `task` job per inserted row (job
 * key `<task>:<row id>`, payload `{email_id, org_id, environment}`). A first message (`resend`
 * false) is skipped for a recipient already queued for the link; a resend is the recipient's next
 * message (numbered after the last), so it is one more, never a repeat of one already sent.
 */
export async function insertLinkEmails(tx: Db, tenant: Tenant, message: LinkMessage, recipients: QueuedRecipient[], task: string, resend = false): Promise<QueuedLinkEmail[]> {
  const number = resend ? '(select coalesce(max(l.resend) + 1, 0) from link_emails l where l.object_id = ? and l.recipient = r.recipient)' : '0';
  return rows<QueuedLinkEmail>(tx,
    `with queued as (
       insert into link_emails (id, org_id, environment, object_type, object_id, kind, recipient, recipient_name, url, summary, resend)
       select id, ?, ?, ?, ?, ?, recipient, name, ?, ?, ${number} from unnest(?::text[], ?::text[], ?::text[]) as r(id, recipient, name)
       on conflict (object_id, recipient, resend) do nothing
       returning id, recipient, resend)
     select id, recipient, resend, (graphile_worker.add_job(?, json_build_object('email_id', id, 'org_id', ?::text, 'environment', ?::text), job_key => ? || id, max_attempts => 25)).id as job_id
       from queued`,
    [tenant.orgId, tenant.environment, message.objectType, message.objectId, message.kind, message.url, message.summary ?? null,
      ...(resend ? [message.objectId] : []),
      recipients.map((r) => r.id), recipients.map((r) => r.email), recipients.map((r) => r.name),
      task, tenant.orgId, tenant.environment, `${task}:`]);
}

/** The message moves `pending → sending` with one more attempt; null when it was not pending. */
export async function claimPendingLinkEmail(db: Db, id: string, orgId: string, environment: string): Promise<LinkEmail | null> {
  const found = await rows<LinkEmail>(db,
    `update link_emails set state = 'sending', attempts = attempts + 1
      where id = ? and org_id = ? and environment = ? and state = 'pending'
     returning id, org_id, environment, object_type, object_id, kind, recipient, recipient_name, url, summary, attempts`,
    [id, orgId, environment]);
  return found[0] ?? null;
}

export async function setLinkEmailSent(db: Db, email: LinkEmail, messageId: string | null): Promise<void> {
  await rows(db, `update link_emails set state = 'sent', sent_at = now(), message_id = ?, last_error = null where id = ? and org_id = ? and environment = ?`,
    [messageId, email.id, email.org_id, email.environment]);
}

/** The message's state after a refusal (`pending` again, or `failed`), with the refusal kept. */
export async function setLinkEmailRefused(tx: Db, email: LinkEmail, state: 'pending' | 'failed', error: string): Promise<void> {
  await rows(tx, `update link_emails set state = ?, last_error = ? where id = ? and org_id = ? and environment = ?`,
    [state, error, email.id, email.org_id, email.environment]);
}
