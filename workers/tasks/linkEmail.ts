/**
 * Sends link e-mails from the outbox (api/families/intents/outbox.ts): through SMTP when SMTP_URL
 * is set, otherwise as `.eml` files under `<data dir>/mail/` (logged with their recipient). A
 * refusal before the server took the message (connection, greeting, auth, 4xx) is retried on
 * the webhook schedule; a 5xx, an exhausted schedule or a failure whose outcome is unknown is
 * final, so no recipient ever gets a link twice.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { createTransport } from 'nodemailer';
import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import type { Config } from '../../api/config.ts';
import type { Db } from '../../api/db/connection.ts';
import { claimLinkEmail, markLinkEmailRefused, markLinkEmailSent, type LinkEmail, type SendJob } from '../../api/families/intents/outbox.ts';

const WORDING: Record<string, { subject: string; action: string }> = {
  checkout_link: { subject: 'Your payment link', action: 'Pay securely at this link:' },
  payouts_enrollment_link: { subject: 'Connect your bank account for payouts', action: 'Connect the bank account your payouts should go to:' },
  account_enrollment_link: { subject: 'Set up your processing account', action: 'Set up your processing account here:' },
  payment_activation: { subject: 'Connect your bank account', action: 'Connect the bank account your payments should go to:' },
  payment_link: { subject: 'Your payment link', action: 'Pay securely at this link:' },
  invoice: { subject: 'Your invoice', action: 'Pay it securely at this link:' },
};

export interface OutgoingMessage {
  from: string;
  to: { name: string; address: string };
  subject: string;
  text: string;
  headers: Record<string, string>;
}

export interface Mailer {
  /** Resolves with the message id once the server (or the file) took it. */
  send: (email: LinkEmail, message: OutgoingMessage) => Promise<string | null>;
}

export function composeLinkEmail(email: LinkEmail, from: string): OutgoingMessage {
  const wording = WORDING[email.kind] ?? WORDING.payment_activation;
  const greeting = email.recipient_name ? `Hello ${email.recipient_name},` : 'Hello,';
  return {
    from,
    to: { name: email.recipient_name ?? '', address: email.recipient },
    subject: wording.subject,
    text: `${greeting}\n\n${email.summary ? `${email.summary}\n\n` : ''}${wording.action}\n\n${email.url}\n\nIf you did not expect this message, you can ignore it.\n`,
    // Receivers can drop a repeat by this id (there is none to drop: each message is sent at most once).
    headers: { 'X-Settle-Email-Id': email.id, 'X-Settle-Object-Id': email.object_id },
  };
}

export function createMailer(config: Config, log: Logger): Mailer {
  if (config.smtpUrl) {
    const transport = createTransport(config.smtpUrl);
    return { send: async (_email, message) => (await transport.sendMail(message)).messageId ?? null };
  }
  const files = createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  const dir = path.join(config.dataDir, 'mail');
  return {
    send: async (email, message) => {
      const info = await files.sendMail(message);
      await fs.mkdir(dir, { recursive: true });
      await fs.writeFile(path.join(dir, `${email.id}.eml`), info.message as Buffer, { flag: 'wx' });
      log.info({ recipient: email.recipient, file: `${email.id}.eml`, object_id: email.object_id }, 'e-mail written (no SMTP_URL)');
      return info.messageId ?? null;
    },
  };
}

type SendError = Error & { responseCode?: number; command?: string; code?: string; syscall?: string };

/** SMTP steps before the message itself is handed over. */
const BEFORE_MESSAGE = new Set(['CONN', 'EHLO', 'HELO', 'STARTTLS', 'AUTH PLAIN', 'AUTH LOGIN', 'AUTH XOAUTH2', 'AUTH CRAM-MD5', 'MAIL FROM', 'RCPT TO']);

/** Whether the message cannot have been taken, so another attempt cannot duplicate it. */
function nothingHandedOver(error: SendError): boolean {
  if (typeof error.responseCode === 'number') return error.responseCode >= 400 && error.responseCode < 500; // the server said "not now"
  if (error.code === 'ECONNECTION' || error.code === 'EDNS') return true; // never connected
  if (error.syscall) return error.code !== 'EEXIST'; // the .eml file was not written
  return error.command !== undefined && BEFORE_MESSAGE.has(error.command);
}

export interface LinkEmailOptions {
  /** where messages go; default: SMTP_URL, or `.eml` files under the data directory */
  mailer?: Mailer;
  /** the worker's clock, which a refused message's next attempt is timed by; default: the machine's */
  clock?: () => Date;
}

export function sendLinkEmail(db: Db, config: Config, log: Logger, options: LinkEmailOptions = {}): Task {
  const mailer = options.mailer ?? createMailer(config, log);
  const clock = options.clock ?? (() => new Date());
  return async (payload) => {
    const job = payload as Partial<SendJob>;
    if (typeof job.email_id !== 'string' || typeof job.org_id !== 'string' || typeof job.environment !== 'string') {
      throw new Error('send_link_email needs email_id, org_id and environment');
    }
    const email = await claimLinkEmail(db, job as SendJob);
    if (!email) return;
    try {
      await markLinkEmailSent(db, email, await mailer.send(email, composeLinkEmail(email, config.smtpFrom)));
    } catch (error) {
      const failure = error as SendError;
      const delay = config.webhookRetrySchedule[email.attempts - 1];
      const retryAt = nothingHandedOver(failure) && delay !== undefined ? new Date(clock().getTime() + delay) : null;
      log.warn({ recipient: email.recipient, object_id: email.object_id, attempt: email.attempts, code: failure.responseCode ?? failure.code, retry: Boolean(retryAt) }, `e-mail not sent: ${failure.message}`);
      await markLinkEmailRefused(db, email, failure.message, retryAt);
    }
  };
}
